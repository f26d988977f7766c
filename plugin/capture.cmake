# Capture plans. mdp_capture_core is pure (state machine, admission policy,
# folders and manifest, config keys) and is what the unit tests link;
# mdp_capture adds the glue to the server and collectd and is linked into
# memdiag.so by server.cmake.
add_library(mdp_capture_core STATIC
  ${CMAKE_CURRENT_LIST_DIR}/plan.c
  ${CMAKE_CURRENT_LIST_DIR}/plan_sched.c
  ${CMAKE_CURRENT_LIST_DIR}/capture_fs.c
  ${CMAKE_CURRENT_LIST_DIR}/capture_config.c
  ${CMAKE_CURRENT_LIST_DIR}/capture_request.c)
target_include_directories(mdp_capture_core PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(mdp_capture_core PUBLIC mdp_detector mdproto m)

if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/server.h)
  add_library(mdp_capture STATIC ${CMAKE_CURRENT_LIST_DIR}/capture_glue.c)
  target_compile_definitions(mdp_capture PRIVATE HAVE_CONFIG_H)
  target_include_directories(mdp_capture PRIVATE /usr/include ${COLLECTD_INCLUDE_DIR})
  target_link_libraries(mdp_capture PUBLIC mdp_capture_core mdproto)
endif()

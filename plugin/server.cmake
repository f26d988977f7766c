# memdiag.so: the collectd plugin (server thread, registry, /proc sampling,
# operator requests). Built as a MODULE without -z defs: collectd's own
# symbols (plugin_log, plugin_dispatch_values, ...) resolve when collectd
# loads it.

# collectd-dev's daemon/collectd.h includes "gnulib_config.h", which the
# Debian package does not ship; an empty one stands in for it.
set(MDP_COLLECTD_COMPAT_DIR ${CMAKE_CURRENT_BINARY_DIR}/collectd-compat)
file(MAKE_DIRECTORY ${MDP_COLLECTD_COMPAT_DIR})
if(NOT EXISTS ${MDP_COLLECTD_COMPAT_DIR}/gnulib_config.h)
  file(WRITE ${MDP_COLLECTD_COMPAT_DIR}/gnulib_config.h
       "/* empty: collectd-dev does not ship this header */\n")
endif()

add_library(memdiag MODULE
  ${CMAKE_CURRENT_LIST_DIR}/memdiag.c
  ${CMAKE_CURRENT_LIST_DIR}/config.c
  ${CMAKE_CURRENT_LIST_DIR}/server.c
  ${CMAKE_CURRENT_LIST_DIR}/relay.c
  ${CMAKE_CURRENT_LIST_DIR}/control.c
  ${CMAKE_CURRENT_LIST_DIR}/registry.c
  ${CMAKE_CURRENT_LIST_DIR}/sampler.c)
set_target_properties(memdiag PROPERTIES PREFIX "" OUTPUT_NAME memdiag
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
target_compile_definitions(memdiag PRIVATE HAVE_CONFIG_H MDP_VERSION="${PROJECT_VERSION}")
target_include_directories(memdiag PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${MDP_COLLECTD_COMPAT_DIR})
target_include_directories(memdiag SYSTEM PRIVATE ${COLLECTD_INCLUDE_DIR} /usr/include)
target_link_libraries(memdiag PRIVATE mdproto mdp_detector Threads::Threads m)
if(TARGET mdp_capture)
  target_compile_definitions(memdiag PRIVATE MDP_HAVE_CAPTURE)
  target_link_libraries(memdiag PRIVATE mdp_capture)
  target_include_directories(mdp_capture SYSTEM PRIVATE ${MDP_COLLECTD_COMPAT_DIR})
endif()

# libmemdiag-hook (C core) and the Ruby extension that binds it.
add_library(memdiag_hook STATIC
  src/backoff.c
  src/convert.c
  src/fork.c
  src/hook.c
  src/io.c
  src/log.c
  src/queue.c)
target_include_directories(memdiag_hook PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_link_libraries(memdiag_hook PUBLIC mdproto Threads::Threads)

# The Ruby extension is built here rather than by mkmf, with the compiler
# flags of the rest of the tree. Paths come from the Ruby that will load it.
set(MDH_RUBY_LIB_OUT ${CMAKE_CURRENT_BINARY_DIR}/ruby/lib)
foreach(_k rubyhdrdir rubyarchhdrdir ENABLE_SHARED libdir LIBRUBYARG_SHARED DLEXT)
  execute_process(
    COMMAND ${RUBY_EXECUTABLE} -e "print RbConfig::CONFIG['${_k}']"
    OUTPUT_VARIABLE MDH_RUBY_${_k} RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "cannot ask ${RUBY_EXECUTABLE} for RbConfig['${_k}']")
  endif()
endforeach()

add_library(memdiag_hook_native MODULE ruby/ext/memdiag_hook/hook_native.c)
set_target_properties(memdiag_hook_native PROPERTIES
  PREFIX "" OUTPUT_NAME hook_native SUFFIX ".${MDH_RUBY_DLEXT}"
  LIBRARY_OUTPUT_DIRECTORY ${MDH_RUBY_LIB_OUT}/memdiag
  C_VISIBILITY_PRESET hidden)
# Ruby's own headers are not -Wextra clean; keep them out of -Werror.
target_include_directories(memdiag_hook_native SYSTEM PRIVATE
  ${MDH_RUBY_rubyarchhdrdir} ${MDH_RUBY_rubyhdrdir})
target_link_libraries(memdiag_hook_native PRIVATE memdiag_hook)
# Export Init_hook_native only: the wire and hook symbols linked in from the
# static libraries must not clash with another extension's.
target_link_options(memdiag_hook_native PRIVATE "LINKER:--exclude-libs,ALL")
if(MDH_RUBY_ENABLE_SHARED STREQUAL "yes")
  # as mkmf does for a shared libruby
  target_link_directories(memdiag_hook_native PRIVATE ${MDH_RUBY_libdir})
  separate_arguments(_mdh_libruby UNIX_COMMAND "${MDH_RUBY_LIBRUBYARG_SHARED}")
  target_link_libraries(memdiag_hook_native PRIVATE ${_mdh_libruby})
endif()

# Copy the Ruby sources beside the extension so that
#   ruby -I build/worker-hook/ruby/lib -r memdiag/hook
# works from the build tree.
file(GLOB_RECURSE _mdh_rb_sources CONFIGURE_DEPENDS
  RELATIVE ${CMAKE_CURRENT_SOURCE_DIR}/ruby/lib
  ${CMAKE_CURRENT_SOURCE_DIR}/ruby/lib/*)
set(_mdh_rb_outputs)
foreach(_f ${_mdh_rb_sources})
  add_custom_command(
    OUTPUT ${MDH_RUBY_LIB_OUT}/${_f}
    COMMAND ${CMAKE_COMMAND} -E copy_if_different
            ${CMAKE_CURRENT_SOURCE_DIR}/ruby/lib/${_f} ${MDH_RUBY_LIB_OUT}/${_f}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/ruby/lib/${_f}
    COMMENT "ruby lib ${_f}" VERBATIM)
  list(APPEND _mdh_rb_outputs ${MDH_RUBY_LIB_OUT}/${_f})
endforeach()
add_custom_target(memdiag_hook_ruby ALL DEPENDS ${_mdh_rb_outputs} memdiag_hook_native)
set(MEMDIAG_HOOK_RUBY_LIB ${MDH_RUBY_LIB_OUT} CACHE INTERNAL "Ruby load path of the built hook")

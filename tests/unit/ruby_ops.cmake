# Worker operations (worker-hook/ruby/lib/memdiag/hook/operations.rb), tested in
# real Ruby with minitest; each file is its own process.
file(GLOB _md_ruby_ops_tests ${PROJECT_SOURCE_DIR}/tests/ruby/ops/*_test.rb)
foreach(_f ${_md_ruby_ops_tests})
  get_filename_component(_n ${_f} NAME_WE)
  add_test(NAME ruby_ops.${_n}
           COMMAND ${RUBY_EXECUTABLE} -I ${PROJECT_SOURCE_DIR}/worker-hook/ruby/lib ${_f}
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endforeach()

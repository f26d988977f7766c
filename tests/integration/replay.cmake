# memdiagctl replay on the recorded traces and on broken input; each test
# file is its own ctest. memdiagctl only exists once the CLI is complete.
if(TARGET memdiagctl)
  foreach(_t traces errors)
    add_test(NAME replay_${_t} COMMAND ${RUBY_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/replay/${_t}_test.rb)
    set_tests_properties(replay_${_t} PROPERTIES ENVIRONMENT
      "MEMDIAG_CTL=$<TARGET_FILE:memdiagctl>;MEMDIAG_TRACES_DIR=${MEMDIAG_TRACES_DIR}")
  endforeach()
endif()

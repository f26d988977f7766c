# Detector, its config keys and the csv series reader (cmocka), each test
# its own process. The shared traces are read from MEMDIAG_TRACES_DIR.
foreach(_t test_detector_synthetic test_detector_traces test_detector_config test_detector_state test_series_csv)
  add_executable(${_t} ${CMAKE_CURRENT_LIST_DIR}/${_t}.c)
  target_link_libraries(${_t} PRIVATE mdp_detector PkgConfig::CMOCKA m)
  target_compile_definitions(${_t} PRIVATE MEMDIAG_TRACES_DIR="${MEMDIAG_TRACES_DIR}")
  add_test(NAME detector.${_t} COMMAND ${_t})
endforeach()

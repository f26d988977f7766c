add_executable(detector_cost_bench ${CMAKE_CURRENT_LIST_DIR}/detector_cost.c)
target_link_libraries(detector_cost_bench PRIVATE mdp_detector m)
# Smoke run with tiny sizes so the benchmark cannot rot unnoticed.
add_test(NAME bench.detector_cost.smoke COMMAND detector_cost_bench --workers 10 --hours 3)
set_tests_properties(bench.detector_cost.smoke PROPERTIES PASS_REGULAR_EXPRESSION "mean cost per sample")

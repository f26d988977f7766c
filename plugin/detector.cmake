# The leak detector and the series reader: pure code shared by the plugin
# (memdiag.so) and memdiagctl replay.
add_library(mdp_detector STATIC
  ${CMAKE_CURRENT_LIST_DIR}/detector.c
  ${CMAKE_CURRENT_LIST_DIR}/detector_config.c
  ${CMAKE_CURRENT_LIST_DIR}/series_csv.c)
target_include_directories(mdp_detector PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(mdp_detector PUBLIC m)

# Wire library unit tests (cmocka), each its own process.
foreach(_t test_frame test_tls)
  add_executable(${_t} ${CMAKE_CURRENT_LIST_DIR}/proto/${_t}.c)
  target_link_libraries(${_t} PRIVATE mdproto PkgConfig::CMOCKA OpenSSL::SSL)
  target_compile_definitions(${_t} PRIVATE MD_CERTS_SCRIPT="${MEMDIAG_CONF_DIR}/memdiag-certs")
  add_test(NAME proto.${_t} COMMAND ${_t})
endforeach()

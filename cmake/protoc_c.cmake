# The protobuf-c generator, however the system ships it:
#   protoc with the protoc-gen-c plugin   protobuf-c 1.5 (Debian 13), where
#                                         protoc-c is deprecated
#   protoc-c                              protobuf-c 1.4 (Debian 12; protoc
#                                         is often not installed there)
# Sets PROTOC_C_COMMAND, a list to run with --proto_path= --c_out= FILE.proto,
# and PROTOC_C_COMMAND_STRING, the same as one string of words for shell
# scripts (worker-hook/ruby/build-gem). -DMEMDIAG_PROTOC_C=protoc-c|protoc
# picks one.
set(MEMDIAG_PROTOC_C "" CACHE STRING "protobuf-c generator: protoc (with protoc-gen-c), protoc-c, or empty to choose")
find_program(PROTOC_EXECUTABLE protoc)
find_program(PROTOC_GEN_C protoc-gen-c)
find_program(PROTOC_C protoc-c)
if(MEMDIAG_PROTOC_C STREQUAL "protoc" OR
   (MEMDIAG_PROTOC_C STREQUAL "" AND PROTOC_EXECUTABLE AND PROTOC_GEN_C))
  if(NOT PROTOC_EXECUTABLE OR NOT PROTOC_GEN_C)
    message(FATAL_ERROR "MEMDIAG_PROTOC_C=protoc needs protoc and protoc-gen-c (protobuf-compiler, protobuf-c-compiler)")
  endif()
  set(PROTOC_C_COMMAND ${PROTOC_EXECUTABLE} --plugin=protoc-gen-c=${PROTOC_GEN_C})
elseif(PROTOC_C AND NOT MEMDIAG_PROTOC_C STREQUAL "protoc")
  set(PROTOC_C_COMMAND ${PROTOC_C})
else()
  message(FATAL_ERROR "no protobuf-c generator: install protobuf-c-compiler (make deps)")
endif()
list(JOIN PROTOC_C_COMMAND " " PROTOC_C_COMMAND_STRING)
message(STATUS "protobuf-c generator: ${PROTOC_C_COMMAND_STRING}")

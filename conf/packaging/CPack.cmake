# make package: build/memdiag_<version>_<arch>.deb for Debian 12.
#
#   /usr/lib/collectd/memdiag.so                  the plugin (plugin/CMakeLists.txt)
#   /usr/bin/memdiagctl                           the operator CLI (plugin/ctl/)
#   /usr/bin/memdiag-certs                        the certificate generator
#   /usr/share/doc/memdiag/                       README, docs/, examples/ (memdiag.conf,
#                                                 Prometheus rules, Grafana dashboard)
#   /usr/lib/sysusers.d/memdiag.conf              group memdiag
#   /usr/lib/tmpfiles.d/memdiag.conf              /run/memdiag 0750 root:memdiag
#   /usr/lib/systemd/system/collectd.service.d/memdiag.conf
#                                                 collectd.service makes /run/memdiag
#   /usr/share/man/man1/memdiagctl.1.gz, memdiag-certs.1.gz, man5/collectd-memdiag.5.gz
#   /usr/share/doc/memdiag/copyright, changelog.gz (and the same for ruby-memdiag-hook)
#                                                 conf/packaging/PackageDocs.cmake
#
# Depends is collectd-core and openssl (memdiag-certs) plus what
# dpkg-shlibdeps finds for the binaries, so it follows the libraries they link.
# A second package, ruby-memdiag-hook, puts the worker hook into Debian
# Ruby's vendor_ruby (install rules in worker-hook/CMakeLists.txt).
set(_mdpkg ${PROJECT_SOURCE_DIR}/conf/packaging)

install(PROGRAMS ${PROJECT_SOURCE_DIR}/conf/memdiag-certs DESTINATION bin COMPONENT memdiag)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/conf/memdiag-ship-rclone
        DESTINATION share/doc/memdiag/examples COMPONENT memdiag)
install(FILES ${PROJECT_SOURCE_DIR}/conf/memdiag.conf
              ${PROJECT_SOURCE_DIR}/conf/prometheus/memdiag-rules.yml
              ${PROJECT_SOURCE_DIR}/conf/grafana/memdiag.json
        DESTINATION share/doc/memdiag/examples COMPONENT memdiag)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/memdiag COMPONENT memdiag)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/memdiag/docs
        COMPONENT memdiag FILES_MATCHING PATTERN "*.md")
install(FILES ${_mdpkg}/sysusers.conf DESTINATION lib/sysusers.d RENAME memdiag.conf
        COMPONENT memdiag)
install(FILES ${_mdpkg}/tmpfiles.conf DESTINATION lib/tmpfiles.d RENAME memdiag.conf
        COMPONENT memdiag)

find_program(MD_DPKG dpkg)
if(MD_DPKG)
  execute_process(COMMAND ${MD_DPKG} --print-architecture
                  OUTPUT_VARIABLE _md_arch OUTPUT_STRIP_TRAILING_WHITESPACE)
else()
  set(_md_arch amd64)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME memdiag)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CONTACT "${MEMDIAG_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${MEMDIAG_HOMEPAGE}")
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${_md_arch})
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# One .deb per component: memdiag (the host side) and, when Debian's Ruby
# has a vendor_ruby (worker-hook/CMakeLists.txt), ruby-memdiag-hook.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL memdiag)
set(CPACK_DEBIAN_MEMDIAG_PACKAGE_NAME memdiag)
set(CPACK_DEBIAN_MEMDIAG_FILE_NAME "memdiag_${PROJECT_VERSION}_${_md_arch}.deb")
set(CPACK_DEBIAN_MEMDIAG_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_MEMDIAG_PACKAGE_DEPENDS "collectd-core, openssl")
set(CPACK_DEBIAN_MEMDIAG_PACKAGE_SUGGESTS "collectd, rclone, ruby-memdiag-hook")
# Our own postrm: CPack's default one runs ldconfig because memdiag.so is
# under /usr/lib, but it is a collectd plugin, not a shared library.
set(CPACK_DEBIAN_MEMDIAG_PACKAGE_CONTROL_EXTRA ${_mdpkg}/postinst ${_mdpkg}/postrm)
set(CPACK_DEBIAN_MEMDIAG_DESCRIPTION
"capture the evidence of a memory leak in a Ruby worker before it is restarted
A collectd plugin that tracks the memory of Ruby workers, detects
sustained growth and captures heap dumps, GC profiles and thread dumps
before the worker is restarted, plus memdiagctl, its operator CLI, and
memdiag-certs. The worker hook is ruby-memdiag-hook or the memdiag-hook gem.")
if(MDH_DEB_RUBY)
  list(APPEND CPACK_COMPONENTS_ALL rubyhook)
  set(CPACK_DEBIAN_RUBYHOOK_PACKAGE_NAME ruby-memdiag-hook)
  set(CPACK_DEBIAN_RUBYHOOK_FILE_NAME "ruby-memdiag-hook_${PROJECT_VERSION}_${_md_arch}.deb")
  set(CPACK_DEBIAN_RUBYHOOK_PACKAGE_SECTION ruby)
  set(CPACK_DEBIAN_RUBYHOOK_PACKAGE_DEPENDS "${MDH_DEB_RUBY}")
  set(CPACK_DEBIAN_RUBYHOOK_DESCRIPTION
"memdiag worker hook for Debian's Ruby
Runs inside a Ruby worker (Puma, Unicorn, Sidekiq, a script) and answers
the memdiag collectd plugin: heap dumps, GC profiles, allocation traces,
thread and fiber dumps. Load it with RUBYOPT=-rmemdiag/hook/auto.")
endif()
include(CPack)

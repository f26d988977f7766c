# What the Debian packages carry beside the program (conf/packaging/CPack.cmake),
# made at build time from one source each so that nothing is a copy:
#   build/packaging/copyright        DEP-5, from LICENSE (debian-copyright.rb)
#   build/packaging/changelog.gz     Debian format, from CHANGELOG.md (debian-changelog.rb)
#   build/man/memdiagctl.1.gz, memdiag-certs.1.gz, collectd-memdiag.5.gz
#                                    from conf/man/*.md and docs/configuration.md (gen-man.rb)
# MEMDIAG_MAINTAINER is the packages' Maintainer (and the changelog's
# signature): by default the git user of the checkout, else the author of
# its last commit; set it with -DMEMDIAG_MAINTAINER="Name <mail>".
set(_mdpkg ${PROJECT_SOURCE_DIR}/conf/packaging)
set(_mdman ${PROJECT_SOURCE_DIR}/conf/man)

if(NOT DEFINED CACHE{MEMDIAG_MAINTAINER})
  set(_md_who "")
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${PROJECT_SOURCE_DIR} config user.name
                    OUTPUT_VARIABLE _md_name OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${PROJECT_SOURCE_DIR} config user.email
                    OUTPUT_VARIABLE _md_mail OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_md_name AND _md_mail)
      set(_md_who "${_md_name} <${_md_mail}>")
    endif()
    if(NOT _md_who MATCHES "^[^<>]+ <[^@<>]+@[^@<>]+\\.[^@<>]+>$" OR _md_who MATCHES "root|localhost")
      execute_process(COMMAND ${GIT_EXECUTABLE} -C ${PROJECT_SOURCE_DIR} log -1 "--format=%an <%ae>"
                      OUTPUT_VARIABLE _md_who OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
  endif()
  if(NOT _md_who MATCHES "^[^<>]+ <[^@<>]+@[^@<>]+\\.[^@<>]+>$" OR _md_who MATCHES "root|localhost")
    set(_md_who "memdiag maintainers <memdiag@users.noreply.github.com>")
  endif()
  set(MEMDIAG_MAINTAINER "${_md_who}" CACHE STRING
      "Maintainer of the Debian packages and signer of their changelog: Name <mail>")
endif()
if(NOT MEMDIAG_MAINTAINER MATCHES "^[^<>]+ <[^@<>]+@[^@<>]+\\.[^@<>]+>$")
  message(FATAL_ERROR "MEMDIAG_MAINTAINER must be 'Name <user@host.domain>', not '${MEMDIAG_MAINTAINER}'")
endif()
set(MEMDIAG_HOMEPAGE "https://github.com/memdiag/memdiag" CACHE STRING
    "the project's home page (the packages' Homepage; the gemspec names the same)")

execute_process(COMMAND ${RUBY_EXECUTABLE} -rkramdown -e "print Kramdown::VERSION"
                RESULT_VARIABLE _md_kramdown OUTPUT_QUIET ERROR_QUIET)
if(NOT _md_kramdown EQUAL 0)
  message(FATAL_ERROR "the man pages need kramdown for ${RUBY_EXECUTABLE}: apt-get install ruby-kramdown (make deps)")
endif()
find_program(MD_GZIP gzip REQUIRED)

set(_md_pkgdir ${PROJECT_BINARY_DIR}/packaging)
set(_md_mandir ${PROJECT_BINARY_DIR}/man)
file(MAKE_DIRECTORY ${_md_pkgdir} ${_md_mandir})

add_custom_command(
  OUTPUT ${_md_pkgdir}/copyright
  COMMAND ${RUBY_EXECUTABLE} ${_mdpkg}/debian-copyright.rb ${PROJECT_SOURCE_DIR}/LICENSE
          ${_md_pkgdir}/copyright
  DEPENDS ${_mdpkg}/debian-copyright.rb ${PROJECT_SOURCE_DIR}/LICENSE
  COMMENT "packaging: copyright (DEP-5) from LICENSE" VERBATIM)
add_custom_command(
  OUTPUT ${_md_pkgdir}/changelog.gz
  COMMAND ${RUBY_EXECUTABLE} ${_mdpkg}/debian-changelog.rb ${PROJECT_SOURCE_DIR}/CHANGELOG.md
          ${PROJECT_VERSION} ${MEMDIAG_MAINTAINER} ${_md_pkgdir}/changelog
  COMMAND ${MD_GZIP} -9nf ${_md_pkgdir}/changelog
  DEPENDS ${_mdpkg}/debian-changelog.rb ${PROJECT_SOURCE_DIR}/CHANGELOG.md
  COMMENT "packaging: changelog.gz from CHANGELOG.md" VERBATIM)
set(_md_docs_out ${_md_pkgdir}/copyright ${_md_pkgdir}/changelog.gz)
set(MEMDIAG_MAN_PAGES)
foreach(_page memdiagctl.1 memdiag-certs.1 collectd-memdiag.5)
  add_custom_command(
    OUTPUT ${_md_mandir}/${_page}.gz
    COMMAND ${RUBY_EXECUTABLE} ${_mdman}/gen-man.rb ${_mdman}/${_page}.md
            ${PROJECT_SOURCE_DIR}/docs/configuration.md ${PROJECT_VERSION} ${_md_mandir}/${_page}
    COMMAND ${MD_GZIP} -9nf ${_md_mandir}/${_page}
    DEPENDS ${_mdman}/gen-man.rb ${_mdman}/${_page}.md ${PROJECT_SOURCE_DIR}/docs/configuration.md
    COMMENT "man page ${_page}" VERBATIM)
  list(APPEND _md_docs_out ${_md_mandir}/${_page}.gz)
  list(APPEND MEMDIAG_MAN_PAGES ${_md_mandir}/${_page}.gz)
endforeach()
add_custom_target(memdiag_package_docs ALL DEPENDS ${_md_docs_out})

install(FILES ${_md_mandir}/memdiagctl.1.gz ${_md_mandir}/memdiag-certs.1.gz
        DESTINATION share/man/man1 COMPONENT memdiag)
install(FILES ${_md_mandir}/collectd-memdiag.5.gz DESTINATION share/man/man5 COMPONENT memdiag)
install(FILES ${_md_pkgdir}/copyright ${_md_pkgdir}/changelog.gz
        DESTINATION share/doc/memdiag COMPONENT memdiag)
# collectd.service makes /run/memdiag (RuntimeDirectory) before collectd starts.
install(FILES ${_mdpkg}/collectd-memdiag.conf
        DESTINATION lib/systemd/system/collectd.service.d RENAME memdiag.conf COMPONENT memdiag)
if(MDH_DEB_RUBY)
  install(FILES ${_md_pkgdir}/copyright ${_md_pkgdir}/changelog.gz
          DESTINATION share/doc/ruby-memdiag-hook COMPONENT rubyhook)
endif()

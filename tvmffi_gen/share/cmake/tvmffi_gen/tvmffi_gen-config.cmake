# tvmffi_gen: typed Python from a TVM FFI library, generated as a step of the library's own build.
#
#   find_package(tvmffi_gen CONFIG REQUIRED)
#
# Found with no hints when tvmffi-gen is a build requirement under scikit-build-core (this file
# lies at <site-packages>/tvmffi_gen/share/cmake/tvmffi_gen/, which CMake searches under each
# prefix, and scikit-build-core puts site-packages on CMAKE_PREFIX_PATH); otherwise pass
# -Dtvmffi_gen_DIR="$(tvmffi-gen --cmakedir)".
#
# Both functions add a step that runs after <target> is built, only when the library or the
# package's Python sources changed, and regenerates only when what the generator reads differs
# (docs/build-integration.md). A generator error fails the build with the generator's message.
#
#   tvmffi_gen_add_package(<target> NAME <package> [OUTPUT <dir>] [PREFIX <namespace>...])
#     (and any other option of the generator a build may give, by its keyword below)
#     The package `tvmffi-gen LIB -o OUT` writes (on tvmffi-runtime), with the library bundled
#     in it, written into a folder of the build tree and installed as <package>/ (at the
#     top of the wheel under scikit-build-core, whatever wheel.install-dir says); with OUTPUT, written there and not installed (your own
#     packaging carries that folder). The wheel needs tvmffi-runtime at
#     run time: list it in [project] dependencies (the step warns when they lack it).
#
#   tvmffi_gen_add_stubs(<target> PACKAGE <package> [SOURCE_DIR <dir>] [LIBRARY_DIR <dir>]
#                        [OUTPUT <dir>] [DISTRIBUTION <name>])
#     `.pyi` stubs beside the modules of a package built on tvm_ffi, and py.typed, from
#     `tvmffi-gen --stubs-for`: the package SOURCE_DIR/<package> (SOURCE_DIR defaults to
#     ./python) is imported as it will be installed: with the built library copied to
#     LIBRARY_DIR inside it (default: the package folder itself), and the metadata of the
#     distribution DISTRIBUTION (default: the project's name under scikit-build-core, else the
#     package's) listing it, where tvm_ffi.libinfo.load_lib_module looks. The stubs are
#     written into a folder of the build tree and installed into <package>/, beside the modules
#     the wheel gets from your sources; with OUTPUT (such as the package's source folder, to
#     keep them in your tree), written there and not installed.

find_package(Python COMPONENTS Interpreter REQUIRED)

execute_process(
  COMMAND "${Python_EXECUTABLE}" -c "import tvmffi_gen, sys; sys.stdout.write(tvmffi_gen.__version__)"
  RESULT_VARIABLE _tvmffi_gen_status
  OUTPUT_VARIABLE tvmffi_gen_VERSION
  ERROR_VARIABLE _tvmffi_gen_error
)
if (NOT _tvmffi_gen_status EQUAL 0)
  message(
    FATAL_ERROR
      "tvmffi_gen: the Python interpreter ${Python_EXECUTABLE} cannot import tvmffi_gen"
      " (${_tvmffi_gen_error}): install tvmffi-gen there, or point Python_EXECUTABLE at the"
      " interpreter whose `tvmffi-gen --cmakedir` gave this folder"
  )
endif ()
message(STATUS "Found tvmffi_gen ${tvmffi_gen_VERSION} (${Python_EXECUTABLE})")

# The generator's options tvmffi_gen_add_package takes, by shape (a switch, one value, a list),
# each the [tool.tvmffi-gen] key in capitals and passed to the step as --<key in lower case>:
# written from their declarations by `python -m tvmffi_gen.integration.cmake`; a test fails when
# the lines between the markers differ from what it writes.
# BEGIN build options
set(_tvmffi_gen_switch_keywords "")
set(_tvmffi_gen_value_keywords "")
set(_tvmffi_gen_list_keywords "PREFIX")
# END build options

# The package's folder under an install prefix: my.pkg -> my/pkg.
function (_tvmffi_gen_package_path package out_var)
  string(REPLACE "." "/" _path "${package}")
  set(${out_var} "${_path}" PARENT_SCOPE)
endfunction ()

# The generation step of <target>: a command whose output is a stamp, built with the target's
# library (and `depends`), and an install rule for the destination folder.
function (_tvmffi_gen_add_step target kind package destination depends)
  set(_work "${CMAKE_CURRENT_BINARY_DIR}/tvmffi_gen/${target}-${kind}")
  set(_stamp "${_work}/stamp.json")
  add_custom_command(
    OUTPUT "${_stamp}"
    COMMAND
      "${Python_EXECUTABLE}" -m tvmffi_gen.integration.step ${kind} --library "$<TARGET_FILE:${target}>"
      --package "${package}" --destination "${destination}" --work "${_work}" ${ARGN}
    DEPENDS ${target} "$<TARGET_FILE:${target}>" ${depends}
    COMMENT "tvmffi-gen: ${kind} for ${package} from ${target}"
    VERBATIM
  )
  add_custom_target(${target}_tvmffi_gen_${kind} ALL DEPENDS "${_stamp}")
endfunction ()

# Install the default destination (a folder of the build tree) as the package's folder: at the
# top of the wheel under scikit-build-core (SKBUILD_PLATLIB_DIR, site-packages once installed,
# whatever folder wheel.install-dir makes the install prefix), else under the install prefix.
function (_tvmffi_gen_install package destination)
  _tvmffi_gen_package_path("${package}" _path)
  if (DEFINED SKBUILD_PLATLIB_DIR)
    set(_path "${SKBUILD_PLATLIB_DIR}/${_path}")
  endif ()
  install(DIRECTORY "${destination}/" DESTINATION "${_path}" PATTERN "__pycache__" EXCLUDE)
endfunction ()

# Stop the configure step with a message naming FN's call when TARGET is no target, the package
# name (given as OPTION) is missing, or arguments are left over (ARGN).
function (_tvmffi_gen_check_call fn target option name)
  if (NOT TARGET ${target})
    message(FATAL_ERROR "${fn}(${target}): no target named ${target}")
  endif ()
  if (NOT name)
    message(FATAL_ERROR "${fn}(${target}): give the package's name, ${option} <package>")
  endif ()
  if (ARGN)
    message(FATAL_ERROR "${fn}(${target}): unknown arguments ${ARGN}")
  endif ()
endfunction ()

# The step's options for the build options given to FN (their values as arg_<KEYWORD>): --prefix a.
function (_tvmffi_gen_build_options out_var)
  set(_options)
  foreach (_keyword IN LISTS _tvmffi_gen_switch_keywords)
    string(TOLOWER "--${_keyword}" _flag)
    string(REPLACE "_" "-" _flag "${_flag}")
    if (arg_${_keyword})
      list(APPEND _options "${_flag}")
    endif ()
  endforeach ()
  foreach (_keyword IN LISTS _tvmffi_gen_value_keywords _tvmffi_gen_list_keywords)
    string(TOLOWER "--${_keyword}" _flag)
    string(REPLACE "_" "-" _flag "${_flag}")
    foreach (_value IN LISTS arg_${_keyword})
      list(APPEND _options "${_flag}" "${_value}")
    endforeach ()
  endforeach ()
  set(${out_var} "${_options}" PARENT_SCOPE)
endfunction ()

function (tvmffi_gen_add_package target)
  cmake_parse_arguments(
    PARSE_ARGV 1 arg "${_tvmffi_gen_switch_keywords}" "NAME;OUTPUT;${_tvmffi_gen_value_keywords}"
    "${_tvmffi_gen_list_keywords}"
  )
  _tvmffi_gen_check_call(tvmffi_gen_add_package "${target}" NAME "${arg_NAME}" ${arg_UNPARSED_ARGUMENTS})
  _tvmffi_gen_package_path("${arg_NAME}" _path)
  set(_out "${CMAKE_CURRENT_BINARY_DIR}/tvmffi_gen/${target}-package/wheel/${_path}")
  if (arg_OUTPUT)
    get_filename_component(_out "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  else ()
    _tvmffi_gen_install("${arg_NAME}" "${_out}")
  endif ()
  _tvmffi_gen_build_options(_options)
  # under scikit-build-core: warn when [project] dependencies lack tvmffi-runtime
  if (DEFINED SKBUILD_PROJECT_NAME)
    list(APPEND _options --project-dir "${CMAKE_SOURCE_DIR}")
  endif ()
  _tvmffi_gen_add_step(${target} package "${arg_NAME}" "${_out}" "" ${_options})
endfunction ()

function (tvmffi_gen_add_stubs target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PACKAGE;SOURCE_DIR;LIBRARY_DIR;OUTPUT;DISTRIBUTION" "")
  _tvmffi_gen_check_call(tvmffi_gen_add_stubs "${target}" PACKAGE "${arg_PACKAGE}" ${arg_UNPARSED_ARGUMENTS})
  if (NOT arg_SOURCE_DIR)
    set(arg_SOURCE_DIR python)
  endif ()
  if (NOT arg_LIBRARY_DIR)
    set(arg_LIBRARY_DIR .)
  endif ()
  if (NOT arg_DISTRIBUTION AND DEFINED SKBUILD_PROJECT_NAME)
    set(arg_DISTRIBUTION "${SKBUILD_PROJECT_NAME}")
  elseif (NOT arg_DISTRIBUTION)
    string(REGEX REPLACE "[.].*" "" arg_DISTRIBUTION "${arg_PACKAGE}")
  endif ()
  set(_version 0)
  if (DEFINED SKBUILD_PROJECT_VERSION)
    set(_version "${SKBUILD_PROJECT_VERSION}")
  endif ()
  get_filename_component(_sources "${arg_SOURCE_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  _tvmffi_gen_package_path("${arg_PACKAGE}" _path)
  if (NOT IS_DIRECTORY "${_sources}/${_path}")
    message(
      FATAL_ERROR
        "tvmffi_gen_add_stubs(${target}): ${_sources}/${_path} is not a folder: SOURCE_DIR is the"
        " folder holding the package ${arg_PACKAGE}"
    )
  endif ()
  set(_out "${CMAKE_CURRENT_BINARY_DIR}/tvmffi_gen/${target}-stubs/wheel/${_path}")
  if (arg_OUTPUT)
    get_filename_component(_out "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  else ()
    _tvmffi_gen_install("${arg_PACKAGE}" "${_out}")
  endif ()
  file(GLOB_RECURSE _python_sources CONFIGURE_DEPENDS "${_sources}/${_path}/*.py")
  _tvmffi_gen_add_step(
    ${target} stubs "${arg_PACKAGE}" "${_out}" "${_python_sources}" --sources "${_sources}"
    --library-dir "${arg_LIBRARY_DIR}" --distribution "${arg_DISTRIBUTION}" --version "${_version}"
  )
endfunction ()

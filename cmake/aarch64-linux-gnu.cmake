# Cross-compiling trident for aarch64 Linux with Debian's cross toolchain
# (crossbuild-essential-arm64: aarch64-linux-gnu-gcc/g++-12) against an arm64 sysroot that holds
# the target's libraries (Open MPI, parallel HDF5, Boost, oneDNN, GoogleTest, Google Benchmark).
# utils/cross-check.sh makes such a sysroot from Debian's arm64 packages and uses this file:
#   cmake -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DTRIDENT_SYSROOT=DIR ...
# (or TRIDENT_SYSROOT in the environment). CUDA stays off: CUDA for aarch64 needs NVIDIA's sbsa
# target libraries, which Debian does not have.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(NOT TRIDENT_SYSROOT)
  set(TRIDENT_SYSROOT "$ENV{TRIDENT_SYSROOT}")
endif()
if(NOT TRIDENT_SYSROOT OR NOT EXISTS "${TRIDENT_SYSROOT}/usr/include")
  message(FATAL_ERROR "aarch64 toolchain: set TRIDENT_SYSROOT (-D or environment) to an arm64 sysroot "
                      "(utils/cross-check.sh makes one); got '${TRIDENT_SYSROOT}'")
endif()
# try_compile projects re-read this file: hand them the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TRIDENT_SYSROOT)

set(triple aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${triple}-gcc-12)
set(CMAKE_CXX_COMPILER ${triple}-g++-12)
set(CMAKE_SYSROOT "${TRIDENT_SYSROOT}")
set(CMAKE_LIBRARY_ARCHITECTURE ${triple})

# Libraries, headers and package configurations come from the sysroot only; programs (the
# build's own tools, mpiexec for the tests' command lines) from the build machine.
set(CMAKE_FIND_ROOT_PATH "${TRIDENT_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config (FindMPI asks it too) reads the target's .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "${TRIDENT_SYSROOT}/usr/lib/${triple}/pkgconfig:${TRIDENT_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${TRIDENT_SYSROOT}")
set(ENV{PKG_CONFIG_PATH} "")

# MPI and HDF5: the build machine's compiler wrappers (mpicc, h5pcc) would describe the build
# machine's libraries, so FindMPI and FindHDF5 are told where the target's are (paths inside the
# sysroot, as the target sees them; CMAKE_FIND_ROOT_PATH re-roots the searches).
set(MPI_SKIP_COMPILER_WRAPPER TRUE)
set(MPI_C_COMPILER "MPI_C_COMPILER-NOTFOUND" CACHE FILEPATH "no MPI wrapper when cross-compiling")
set(MPI_C_HEADER_DIR "${TRIDENT_SYSROOT}/usr/lib/${triple}/openmpi/include" CACHE PATH "Open MPI headers (target)")
set(MPI_C_LIB_NAMES mpi CACHE STRING "")
set(MPI_mpi_LIBRARY "${TRIDENT_SYSROOT}/usr/lib/${triple}/openmpi/lib/libmpi.so" CACHE FILEPATH "Open MPI library (target)")
# Debian's parallel HDF5, Open MPI flavour; HDF5_ROOT keeps FindHDF5 off the build machine's h5pcc.
set(HDF5_ROOT /usr/lib/${triple}/hdf5/openmpi)
set(HDF5_NO_FIND_PACKAGE_CONFIG_FILE TRUE)

# Where qemu-user is installed, the build's own runs of target programs (gtest discovery, ctest)
# go through it.
find_program(TRIDENT_QEMU_AARCH64 qemu-aarch64-static NO_CMAKE_FIND_ROOT_PATH)
if(TRIDENT_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${TRIDENT_QEMU_AARCH64};-L;${TRIDENT_SYSROOT}")
endif()

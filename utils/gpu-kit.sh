#!/usr/bin/env bash
# Packs a CUDA build for a GPU machine whose image has CUDA, cuBLAS and NCCL but not Open MPI,
# HDF5, oneDNN or Boost, and where nothing can be installed (the lent H200's image): the
# binaries utils/gpu-check.sh runs, every shared library they load that such an image lacks,
# and Open MPI's runtime pieces (orted, its plugins, help texts), into gpu-kit/ (about 20 MiB
# as gpu-kit.tar.xz). There: `tar xf gpu-kit.tar.xz && utils/gpu-check.sh --kit gpu-kit`.
# Ranks on one node run without mpirun (singletons, one per GPU, no orted); mpirun comes along
# for more. The GPU machine's processor is not this one: the kit is built in its own build
# directory (build-kit/) with portable host code (TRIDENT_NATIVE=OFF: no AVX-512 instruction
# anywhere in it; utils/gpu-kit-check.sh verifies that, and runs the kit with this machine's MPI,
# HDF5, oneDNN and Boost hidden and under an emulated Haswell), for sm_90a (H100/H200) only.
#   utils/gpu-kit.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-kit
kit=gpu-kit
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTRIDENT_CUDA=ON -DTRIDENT_NATIVE=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90a-real > "$build.log"
cmake --build "$build" -j "$(nproc)" --target trident test_cuda mpi_nccl >> "$build.log"
rm -rf "$kit" "$kit.tar.xz"
mkdir -p "$kit/bin" "$kit/lib" "$kit/openmpi" "$kit/share/openmpi"
cp "$build/trident" "$build/libtrident_cuda.so" "$build/tests/cuda/test_cuda" "$build/tests/mpi_nccl" "$kit/bin/"
cp "$build/libtrident_cuda.so" "$kit/lib/"  # test_cuda links it; trident opens it beside itself
ompi_lib=/usr/lib/x86_64-linux-gnu/openmpi/lib
cp /usr/bin/orted /usr/bin/orterun "$kit/bin/"
ln -sf orterun "$kit/bin/mpirun"
cp -r "$ompi_lib/openmpi3" "$kit/openmpi/plugins"
cp -r /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix "$kit/openmpi/pmix-plugins"
cp -r /usr/share/openmpi/. "$kit/share/openmpi/"
cp /etc/openmpi/openmpi-mca-params.conf "$kit/openmpi/" 2>/dev/null || true

# Every library the binaries and plugins resolve, except glibc's own (the C runtime and its
# private libraries, which import GLIBC_PRIVATE symbols and fail beside another glibc), the C++
# runtime and CUDA's (the image has newer ones of those, and must use its driver-matched CUDA).
find "$kit/bin" "$kit/openmpi" -type f \( -perm -u+x -o -name '*.so*' \) -exec ldd {} \; 2>/dev/null |
  awk '/=> \// {print $3}' | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | ld-linux* | libgcc_s.so* | libstdc++.so*) ;;
      libresolv.so* | libnsl.so* | libanl.so* | libutil.so* | libmvec.so* | libnss_*.so* | libthread_db.so*) ;;
      libBrokenLocale.so* | libc_malloc_debug.so* | libmemusage.so* | libpcprofile.so* | libSegFault.so*) ;;
      libtrident_cuda.so) ;;
      libcuda.so* | libcudart.so* | libcublas* | libnccl.so* | libnvidia*) ;;
      *) cp -L "$lib" "$kit/lib/" ;;
    esac
  done

cat > "$kit/env.sh" <<'ENV'
# Source on the GPU machine: the kit's binaries and libraries first, CUDA's and NCCL's from the
# image (the toolkit, or the nvidia-* Python wheels PyTorch brings), Open MPI relocated here
# (OPAL_PREFIX; plm isolated: one node, no ssh).
kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cuda_dirs=$(find /usr/local/cuda/ /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu \
  $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null) \
  -maxdepth 4 \( -name 'libcudart.so.13*' -o -name 'libcublasLt.so.13*' -o -name 'libnccl.so.2*' \) \
  -printf '%h\n' 2>/dev/null | sort -u | paste -sd:) || true  # missing directories are fine
export PATH="$kit/bin:$PATH"
export LD_LIBRARY_PATH="$kit/lib:$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export OPAL_PREFIX="$kit"  # orted from $kit/bin, help texts from $kit/share/openmpi
export OMPI_MCA_mca_base_component_path="$kit/openmpi/plugins" PMIX_MCA_mca_base_component_path="$kit/openmpi/pmix-plugins"
export OMPI_MCA_plm=isolated OMPI_MCA_btl=self,vader OMPI_MCA_orte_tmpdir_base=/tmp
export OMPI_MCA_ess_singleton_isolated=1  # a rank started without mpirun forks no orted
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ENV
tar -cJf "$kit.tar.xz" "$kit"
echo "gpu-kit: $(du -sh "$kit" | cut -f1) in $kit/, $(du -h "$kit.tar.xz" | cut -f1) as $kit.tar.xz"

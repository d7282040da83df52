#!/usr/bin/python3
"""A copy of onnxruntime-node's libonnxruntime.so.1 that skips its AVX-512 kernels, so that an
AVX-512 machine measures ONNX Runtime as a CPU without AVX-512 runs it, next to the engine held
the same way (FLORENCE_KERNELS=avx2 ATEN_CPU_CAPABILITY=avx2 DNNL_MAX_CPU_ISA=AVX2
OPENBLAS_CORETYPE=Haswell; run.sh --hold avx2 does both).

    /usr/bin/python3 tools/onnx-baseline/hold_isa.py OUT_DIR
    LD_PRELOAD=OUT_DIR/libonnxruntime.so.1 node tools/onnx-baseline/runner.js ...

ONNX Runtime picks its kernels from CPUID when it loads (MLAS's platform setup, its CPUIDInfo and
the cpuinfo library it bundles); none of them reads a setting, and this machine can neither hide
CPUID bits from a process nor run a virtual machine. So the copy has the few conditional jumps
that take the AVX-512 (AVX-VNNI) branches made unconditional skips. The offsets are those of
onnxruntime-node 1.30.0's linux x64 library (package-lock.json), found by disassembling it
around its `xgetbv` instructions; the original's SHA-256 and each place's bytes are checked
first, and nothing is written unless all match. The original file is never changed; node loads
the copy first (LD_PRELOAD) and the binding takes it by its soname.

    /usr/bin/python3 tools/onnx-baseline/hold_isa.py --no-avx-vnni OUT_DIR

Seen on a 2-core AMD EPYC (Zen 5, AVX-512 and AVX-VNNI), 2026-12-05: the copy's fp32 vision
encoder 2.96-3.02 s against 2.03-2.35 s (its AVX-512 SGEMM skipped); the tokens still equal the
eager model's. By default AVX-VNNI stays: the int8 products run vpdpbusd on 256-bit registers,
as on Intel's consumer CPUs since Alder Lake. --no-avx-vnni also skips MLAS's AVX-VNNI branch
(CPUID leaf 7 subleaf 1, EAX bit 4), which is where its u8 x s8 GEMM and GEMV kernels and its
symmetric convolution are switched to vpdpbusd, so the int8 products run the AVX2 kernels
(vpmaddubsw, vpmaddwd) as on AMD Zen 2 and 3. (An earlier try skipped the branch after it, at
0x16abd2e, which tests AVX-VNNI-INT8 in EDX, and left the GEMM on vpdpbusd.)
"""
import argparse
import hashlib
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.path.join(HERE, "node_modules", "onnxruntime-node", "bin", "napi-v6", "linux", "x64",
                       "libonnxruntime.so.1")
SHA256 = "ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23"

# (file offset, bytes there, bytes written, what it skips)
AVX512 = [
    (0x16abd1b, "740e", "eb0e", "MLAS: the AVX-512F kernels (je over them when CPUID lacks "
                                "AVX512F becomes jmp)"),
    (0x17eb4ef, "746f", "9090", "CPUIDInfo: AVX-512 as the OS enables it (XCR0 & 0xe6 == 0xe6)"),
    (0x1cc77b9, "750c", "eb0c", "cpuinfo: AVX-512 state enabled by the OS"),
]
AVX_VNNI = [
    (0x16abcda, "7438", "eb38", "MLAS: the AVX-VNNI int8 kernels (je over them when CPUID leaf 7.1 "
                                "lacks AVX-VNNI becomes jmp)"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-avx-vnni", action="store_true",
                        help="skip the AVX-VNNI int8 kernels too (a CPU like AMD Zen 2 and 3)")
    parser.add_argument("out", help="folder for the patched libonnxruntime.so.1")
    args = parser.parse_args()
    if not os.path.exists(LIBRARY):
        print(f"hold_isa.py: {LIBRARY} is missing: run tools/onnx-baseline/run.sh once",
              file=sys.stderr)
        return 1
    data = bytearray(open(LIBRARY, "rb").read())
    if hashlib.sha256(data).hexdigest() != SHA256:
        print(f"hold_isa.py: {LIBRARY} is not onnxruntime-node 1.30.0's linux x64 library this "
              "script knows; its offsets would be wrong", file=sys.stderr)
        return 1
    for offset, before, after, what in AVX512 + (AVX_VNNI if args.no_avx_vnni else []):
        old, new = bytes.fromhex(before), bytes.fromhex(after)
        if data[offset:offset + len(old)] != old:
            print(f"hold_isa.py: unexpected bytes at {offset:#x} ({what})", file=sys.stderr)
            return 1
        data[offset:offset + len(new)] = new
    os.makedirs(args.out, exist_ok=True)
    out = os.path.join(args.out, "libonnxruntime.so.1")
    with open(out + ".tmp", "wb") as f:
        f.write(data)
    shutil.copymode(LIBRARY, out + ".tmp")
    os.replace(out + ".tmp", out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

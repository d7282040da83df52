#!/usr/bin/python3
"""The programs on the CPUs people own, emulated by qemu-user on whatever CPU runs the tests: an
AVX2 CPU without AVX-512 or AVX-VNNI (AMD Zen 2 and 3, most desktops and laptops) and an AVX CPU
without AVX2 (Intel Sandy Bridge, an old laptop's).

Elsewhere the tests reach the AVX2 kernel class by holding an AVX-512 machine to it
(FLORENCE_KERNELS=avx2, FLORENCE_AVX_VNNI=0, ATEN_CPU_CAPABILITY, DNNL_MAX_CPU_ISA): the kernels
are chosen as there, but an instruction the CPU lacks that slipped into a path such a CPU runs (an
AVX-512 or VNNI instruction in an AVX2 file, an inline function the linker kept from a file built
for AVX-512, a library's own CPU detection) still runs, since the real CPU has it. Under qemu-user
the process's CPUID says what the emulated CPU says, nothing is forced, and such an instruction
stops the program (SIGILL) instead of passing.

Checks, for the bundled model on a sample scene, each task asked (default <OD> and <CAPTION>), in
float32, bfloat16 and int8, on each CPU model:
- the emulated run exits 0 and picks its kernels by itself (the answer's "runtime" says "row
  kernels AVX2+FMA" and in int8 "int8 encoder products AVX2"; "row kernels LibTorch");
- its tokens are those of the same build held to those kernels on this CPU (the same arithmetic;
  where LibTorch computes bfloat16 products, which sum in bfloat16 there and not here, the same
  labels or text).
And each --kernel-test executable (the kernels against LibTorch) passes on the first CPU model.
QEMU's emulation is 10-50x slower than the CPU: nothing here measures time.

    /usr/bin/python3 tests/app/check_emulated_cpu.py --cli build/bin/florence-studio-cli \
        --package build/share/florence-studio/models/default \
        --image resources/samples/scenes/scene_04.png [--cpu EPYC-Rome] \
        [--kernel-test build/tests/engine/test_linear_rows]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys

# What holds a machine to a kernel class; none of it may reach the emulated runs, which must find
# the class from CPUID alone.
FORCING = ("FLORENCE_KERNELS", "FLORENCE_AVX_VNNI", "FLORENCE_AVX512_VNNI", "FLORENCE_INT8_KERNEL",
           "ATEN_CPU_CAPABILITY", "DNNL_MAX_CPU_ISA", "OPENBLAS_CORETYPE",
           "FLORENCE_BFLOAT16_PRODUCTS")


class Cpu:
    """A QEMU CPU model, what the runtime line must say on it, and how this machine is held to
    the same kernels for the reference answers."""

    def __init__(self, model: str, says: list, int8_says: list, held: dict,
                 exact_bfloat16: bool = True):
        self.model, self.says, self.int8_says, self.held = model, says, int8_says, held
        # Whether bfloat16's tokens can be held to the reference's: not where LibTorch computes
        # the decoder's bfloat16 products, summing in bfloat16 on the emulated CPU and not here.
        self.exact_bfloat16 = exact_bfloat16

    def reference(self, precision: str, emulated: dict) -> tuple:
        """The environment that holds this machine to the emulated run's kernels, and whether
        the tokens must be the same (else the labels or the text)."""
        if precision != "bfloat16":
            return self.held, True
        # oneDNN held below AVX512-BF16 on a CPU that has it refuses bfloat16 products, so the
        # reference leaves oneDNN unheld (its float32 convolutions may then take other kernels:
        # the same tokens on the scene here, compared all the same). Where the emulated CPU's
        # LibTorch sums bfloat16 products in bfloat16, the engine kept its encoders float32;
        # FLORENCE_BFLOAT16_PRODUCTS=inaccurate does the same here. Where it ran them in
        # bfloat16 (another LibTorch), both sides' bfloat16 products differ: the same labels.
        env = {k: v for k, v in self.held.items() if k != "DNNL_MAX_CPU_ISA"}
        float32_encoders = emulated.get("generation", {}).get("encoder_precision") == "float32"
        if float32_encoders:
            env["FLORENCE_BFLOAT16_PRODUCTS"] = "inaccurate"
        return env, float32_encoders and self.exact_bfloat16


CPUS = {
    # AMD Zen 2: AVX2, FMA, F16C, no AVX-512, no AVX-VNNI (in QEMU 7.2 and 10 alike).
    "EPYC-Rome": Cpu("EPYC-Rome", ["row kernels AVX2+FMA"],
                     ["int8 encoder products AVX2", "int8 steps int16"],
                     {"FLORENCE_KERNELS": "avx2", "FLORENCE_AVX_VNNI": "0",
                      "ATEN_CPU_CAPABILITY": "avx2", "DNNL_MAX_CPU_ISA": "AVX2",
                      "OPENBLAS_CORETYPE": "Haswell"}),
    # Intel Sandy Bridge (2011): AVX without AVX2 or FMA, LibTorch's own kernels everywhere.
    "SandyBridge": Cpu("SandyBridge", ["row kernels LibTorch"], [],
                       {"FLORENCE_KERNELS": "torch", "ATEN_CPU_CAPABILITY": "default",
                        "DNNL_MAX_CPU_ISA": "AVX", "OPENBLAS_CORETYPE": "Sandybridge"},
                       exact_bfloat16=False),
}
TASKS = ("<OD>", "<CAPTION>")
PRECISIONS = ("float32", "bfloat16", "int8")


def environment(extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in FORCING}
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    env.update(extra)
    return env


# The programs start themselves again when they set OpenMP's, glibc's or OpenBLAS's variables
# (engine/platform/Process.cpp): from inside qemu-user that new process image would run on this
# CPU, not emulated. With the guard set they keep the variables they were given.
EMULATED = {"FLORENCE_STUDIO_REEXEC": "1"}


def without_qemu_warnings(stderr: str) -> str:
    # QEMU warns once per CPU feature of the model its TCG cannot emulate (none of them vector
    # instructions: pcid, rdseed, ibpb, …).
    return "\n".join(line for line in stderr.splitlines()
                     if "TCG doesn't support requested feature" not in line)


def no_core_files() -> None:
    # qemu-user writes a core file of a program it stops into the working folder.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def answer(prefix: list, cli: str, package: str, image: str, task: str, precision: str,
           env: dict, what: str) -> dict:
    run = subprocess.run(prefix + [cli, "run", "--model", package, "--image", image, "--task", task,
                                   "--precision", precision, "--threads", "2", "--quiet", "--json"],
                         capture_output=True, text=True, env=env, preexec_fn=no_core_files)
    where = "emulated" if prefix else "held here"
    if run.returncode != 0:
        signal = f" (signal {-run.returncode})" if run.returncode < 0 else ""
        raise AssertionError(f"{what}, {where}: exit {run.returncode}{signal}: "
                             f"{without_qemu_warnings(run.stderr).strip()[-600:]}")
    return json.loads(run.stdout)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--cli", required=True)
    p.add_argument("--package", required=True)
    p.add_argument("--image", action="append", required=True)
    p.add_argument("--task", action="append", choices=TASKS,
                   help="a task to answer (repeatable; default all of them)")
    p.add_argument("--kernel-test", action="append", default=[],
                   help="a test executable to run emulated as well (repeatable)")
    p.add_argument("--qemu", default=shutil.which("qemu-x86_64") or "qemu-x86_64")
    p.add_argument("--cpu", action="append", choices=sorted(CPUS),
                   help="QEMU CPU model (repeatable; default all); kernel tests run on the first")
    args = p.parse_args()
    if not os.path.isfile(args.qemu):
        print(f"FAIL {args.qemu} not found: tools/install-deps.sh installs qemu-user",
              file=sys.stderr)
        return 1
    cpus = [CPUS[c] for c in (args.cpu or CPUS)]
    failures = []

    for test in args.kernel_test:
        run = subprocess.run([args.qemu, "-cpu", cpus[0].model, test], capture_output=True,
                             text=True, env=environment(EMULATED), preexec_fn=no_core_files)
        out = run.stdout.strip().splitlines()
        totals = [line for line in out if line.startswith("Totals:")]
        print(f"{'pass' if run.returncode == 0 else 'FAIL'}  {os.path.basename(test)} on "
              f"{cpus[0].model}: "
              f"{totals[-1] if totals else 'no totals'}")
        if run.returncode != 0:
            failures.append(f"{test} on {cpus[0].model}: exit {run.returncode}\n" + "\n".join(
                line for line in out if line.startswith(("FAIL", "   Loc", "QFATAL")))[-2000:]
                + without_qemu_warnings(run.stderr)[-600:])

    tasks = args.task or TASKS
    for cpu, image, task, precision in ((c, i, t, p) for c in cpus for i in args.image
                                        for t in tasks for p in PRECISIONS):
        what = f"{cpu.model}: {os.path.basename(image)} {task} {precision}"
        try:
            e = answer([args.qemu, "-cpu", cpu.model], args.cli, args.package, image, task,
                       precision, environment(EMULATED), what)
            held, exact = cpu.reference(precision, e)
            h = answer([], args.cli, args.package, image, task, precision, environment(held),
                       what)
        except AssertionError as err:
            failures.append(str(err))
            continue
        runtime = e.get("runtime", "")
        for w in cpu.says + (cpu.int8_says if precision == "int8" else []):
            # Whole parts: "AVX2" must not match the start of "AVX2+FMA" or another name.
            if not any(part.strip() == w for part in runtime.split(",")):
                failures.append(f"{what}: the emulated run's runtime line lacks '{w}': {runtime}")
        if exact:
            same = e["generated_ids"] == h["generated_ids"]
        else:  # the same labels or text; boxes may move by a bin
            a, b = e["huggingface"][task], h["huggingface"][task]
            same = a.get("labels") == b.get("labels") if isinstance(a, dict) else a == b
        print(("same  " if same else "DIFFER"), what, json.dumps(e["huggingface"])[:90])
        if not same:
            failures.append(f"{what}: emulated {e['huggingface']} ({e['generated_ids']}) against "
                            f"held here {h['huggingface']} ({h['generated_ids']})")
    for f in failures:
        print("FAIL", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

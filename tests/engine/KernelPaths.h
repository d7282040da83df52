#pragma once
// The kernel paths the operator tests run each case on (engine/ops/KernelPath.h): a data row per
// path, skipped with a message on a CPU that lacks it.
//
//     for (KernelPath path : florence::test::kPaths) QTest::addRow(...) << int(path) << ...;
//     SKIP_UNLESS_SUPPORTED(KernelPath(path));
//     const florence::test::OnPath onPath{KernelPath(path)};

#include "KernelPath.h"

// SKIP_UNLESS_SUPPORTED uses QSKIP: include <QtTest> after LibTorch's headers, whose "slots"
// Qt's macro would rename.

namespace florence::test {

using florence::ops::KernelPath;

constexpr KernelPath kPaths[] = {KernelPath::Avx512, KernelPath::Avx2, KernelPath::Torch};

// Runs the operators on one kernel path until it goes out of scope, then on the one the test
// started with.
class OnPath {
public:
    explicit OnPath(KernelPath path) : m_before(florence::ops::kernelPath()) {
        florence::ops::setKernelPath(path);
    }
    ~OnPath() { florence::ops::setKernelPath(m_before); }
    OnPath(const OnPath&) = delete;
    OnPath& operator=(const OnPath&) = delete;

private:
    KernelPath m_before;
};

} // namespace florence::test

// Skips the current data row when the CPU cannot run `path`.
#define SKIP_UNLESS_SUPPORTED(path)                                                                \
    if (!florence::ops::kernelPathSupported(path))                                                 \
    QSKIP(qPrintable(                                                                              \
        QString("this CPU cannot run the %1 kernels").arg(florence::ops::kernelPathName(path))))

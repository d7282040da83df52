// Internal to the engine (includes LibTorch). The decoder's cached step (model.py's
// Decoder.step) for one token of one to four hypotheses, run from C++ with the same operators
// in the same order as the scripted method, so its logits and cache are the scripted step's to
// the bit (tests/engine/TestNativeStep.cpp). What it saves is the TorchScript interpreter's
// work between them on the calling thread while the helper core waits (the branches of linear()
// and attend() taken again for every product, the cache sliced through a tensor per scalar):
// about 0.3 ms of a 5 ms Florence-2-base int8 step held to AVX2 (docs/performance.md).
//
// Made only for a decoder whose TorchScript code is this version's exporter's
// (currentExporterCode in package/CodeCheck.h): that code is the one this file mirrors, with
// its sizes, layer-norm epsilons and scalings read from the module (the code digest leaves
// numbers out, so a family's dimensions do not change it). Any other step (an earlier
// exporter's package, more than four hypotheses, several tokens) runs the scripted method.
//
//   auto native = NativeStep::fromModule(decoder);   // once, after the weights are final
//   torch::Tensor logits = native->step(ids, past, cache, crossKv, crossMask);
#pragma once

#include <torch/script.h>

#include <memory>
#include <vector>

namespace florence::detail {

class NativeStep {
public:
    // The weights of `decoder` as they are now (after bfloat16 or int8 conversion); they are
    // shared with the module, not copied.
    static std::shared_ptr<const NativeStep> fromModule(const torch::jit::Module& decoder);

    // Whether step() runs a step of this many hypotheses (one token each): one to four.
    static bool handles(int64_t hypotheses) { return hypotheses >= 1 && hypotheses <= 4; }

    // model.py's padding_mask(encoderMask): additive [B, 1, 1, S], made once per request.
    static torch::Tensor crossMask(const torch::Tensor& encoderMask);

    // How many steps this process has run from C++ (the tests check that it did).
    static int64_t stepsRun();

    // Decoder.step(ids, past, cache, crossKv, encoderMask)'s logits [B, vocab]; the cache is
    // written in place at position `past`. `mask` is crossMask(encoderMask).
    torch::Tensor step(const torch::Tensor& ids, int64_t past, const torch::Tensor& cache,
                       const torch::Tensor& crossKv, const torch::Tensor& mask) const;

private:
    struct Norm {
        torch::Tensor weight, bias;
        std::vector<int64_t> shape;
        double eps = 1e-5;
    };
    struct Linear {
        torch::Tensor weight;
        c10::optional<torch::Tensor> bias;
    };
    struct Attention {
        Linear q, k, v, out;
        double scaling = 1.0;
        int64_t heads = 1, headDim = 1;
    };
    struct Layer {
        Attention self, cross;
        Norm selfNorm, crossNorm, finalNorm;
        Linear fc1, fc2;
    };

    torch::Tensor linear(const torch::Tensor& x, const Linear& l) const;
    torch::Tensor norm(const torch::Tensor& x, const Norm& n) const;
    static torch::Tensor split(const torch::Tensor& x, const Attention& a);
    static torch::Tensor merge(const torch::Tensor& x);
    torch::Tensor query(const torch::Tensor& x, const Attention& a) const;
    torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                         const torch::Tensor& mask) const;

    torch::Tensor m_embedTokens, m_embedPositions, m_finalLogitsBias;
    Norm m_embedNorm;
    Linear m_lmHead;
    double m_embedScale = 1.0;
    int64_t m_positionOffset = 2;
    std::vector<Layer> m_layers;
};

} // namespace florence::detail

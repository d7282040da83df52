#include "decoding/NativeStep.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <atomic>
#include <stdexcept>
#include <string>

namespace florence::detail {

namespace {

using torch::Tensor;

// The operators of engine/ops/ through the dispatcher, as the scripted code calls them.
using LinearRowsFn = Tensor(const Tensor&, const Tensor&, const c10::optional<Tensor>&);
using AttendFn = Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&);

const c10::TypedOperatorHandle<LinearRowsFn>& linearRowsOp() {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("florence::linear_rows", "")
                               .typed<LinearRowsFn>();
    return op;
}

const c10::TypedOperatorHandle<AttendFn>& attendOneOp() {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("florence::attend_one", "")
                               .typed<AttendFn>();
    return op;
}

const c10::TypedOperatorHandle<AttendFn>& attendManyOp() {
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("florence::attend_many", "")
                               .typed<AttendFn>();
    return op;
}

std::atomic<int64_t> g_stepsRun{0};

torch::jit::Module child(const torch::jit::Module& m, const std::string& name) {
    if (!m.hasattr(name) || !m.attr(name).isModule())
        throw std::runtime_error("the decoder has no module " + name);
    return m.attr(name).toModule();
}

Tensor tensorAttr(const torch::jit::Module& m, const std::string& name) {
    if (!m.hasattr(name) || !m.attr(name).isTensor())
        throw std::runtime_error("the decoder has no tensor " + name);
    return m.attr(name).toTensor();
}

// A constant of the module's class (nn.LayerNorm's eps and normalized_shape), else its
// attribute.
c10::IValue constantOrAttr(const torch::jit::Module& m, const std::string& name) {
    if (m.type()->hasConstant(name))
        return m.type()->getConstant(name);
    if (m.hasattr(name))
        return m.attr(name);
    throw std::runtime_error("the decoder's module has no " + name);
}

} // namespace

std::shared_ptr<const NativeStep> NativeStep::fromModule(const torch::jit::Module& decoder) {
    auto s = std::make_shared<NativeStep>();
    auto linearOf = [](const torch::jit::Module& m) {
        Linear l;
        l.weight = tensorAttr(m, "weight");
        if (m.hasattr("bias") && m.attr("bias").isTensor())
            l.bias = m.attr("bias").toTensor();
        return l;
    };
    auto normOf = [](const torch::jit::Module& m) {
        Norm n;
        n.weight = tensorAttr(m, "weight");
        n.bias = tensorAttr(m, "bias");
        n.eps = constantOrAttr(m, "eps").toDouble();
        const c10::IValue shape = constantOrAttr(m, "normalized_shape"); // outlives the loop
        for (const c10::IValue& v : shape.toTupleRef().elements())
            n.shape.push_back(v.toInt());
        return n;
    };
    auto attentionOf = [&](const torch::jit::Module& m) {
        Attention a;
        a.q = linearOf(child(m, "q_proj"));
        a.k = linearOf(child(m, "k_proj"));
        a.v = linearOf(child(m, "v_proj"));
        a.out = linearOf(child(m, "out_proj"));
        a.scaling = m.attr("scaling").toDouble();
        a.heads = m.attr("heads").toInt();
        a.headDim = m.attr("head_dim").toInt();
        return a;
    };
    const torch::jit::Module bart = child(decoder, "decoder");
    s->m_embedTokens = tensorAttr(child(bart, "embed_tokens"), "weight");
    s->m_embedPositions = tensorAttr(child(bart, "embed_positions"), "weight");
    s->m_embedNorm = normOf(child(bart, "layernorm_embedding"));
    s->m_lmHead.weight = tensorAttr(child(decoder, "lm_head"), "weight"); // no bias, as logits()
    s->m_finalLogitsBias = tensorAttr(decoder, "final_logits_bias");
    s->m_embedScale = decoder.attr("embed_scale").toDouble();
    s->m_positionOffset = decoder.attr("position_offset").toInt();
    // The scripted step runs every module of the list (TorchScript unrolls the loop over it).
    const torch::jit::Module layers = child(bart, "layers");
    const int64_t count = int64_t(layers.children().size());
    if (count != decoder.attr("num_layers").toInt())
        throw std::runtime_error("the decoder's num_layers is not its number of layers");
    for (int64_t i = 0; i < count; ++i) {
        const torch::jit::Module m = child(layers, std::to_string(i));
        Layer l;
        l.self = attentionOf(child(m, "self_attn"));
        l.cross = attentionOf(child(m, "encoder_attn"));
        l.selfNorm = normOf(child(m, "self_attn_layer_norm"));
        l.crossNorm = normOf(child(m, "encoder_attn_layer_norm"));
        l.finalNorm = normOf(child(m, "final_layer_norm"));
        l.fc1 = linearOf(child(m, "fc1"));
        l.fc2 = linearOf(child(m, "fc2"));
        s->m_layers.push_back(std::move(l));
    }
    linearRowsOp(); // the operators are there before the first step needs them
    attendOneOp();
    attendManyOp();
    return s;
}

Tensor NativeStep::crossMask(const Tensor& encoderMask) {
    return at::rsub(encoderMask.to(torch::kFloat32), 1.0)
        .mul(-3.4028234663852886e38)
        .view({encoderMask.size(0), 1, 1, encoderMask.size(1)});
}

// model.py's linear() for one to four rows: florence::linear_rows whatever the weights' dtype.
Tensor NativeStep::linear(const Tensor& x, const Linear& l) const {
    return linearRowsOp().call(x, l.weight, l.bias);
}

Tensor NativeStep::norm(const Tensor& x, const Norm& n) const {
    return at::layer_norm(x, n.shape, n.weight, n.bias, n.eps);
}

int64_t NativeStep::stepsRun() {
    return g_stepsRun.load();
}

Tensor NativeStep::split(const Tensor& x, const Attention& a) {
    return x.view({x.size(0), x.size(1), a.heads, a.headDim}).transpose(1, 2);
}

Tensor NativeStep::merge(const Tensor& x) {
    return x.transpose(1, 2).reshape({x.size(0), x.size(2), x.size(1) * x.size(3)});
}

Tensor NativeStep::query(const Tensor& x, const Attention& a) const {
    return split(linear(x, a.q).mul(a.scaling), a);
}

// model.py's attend().
Tensor NativeStep::attend(const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& mask) const {
    if (q.size(2) == 1 && q.size(0) == k.size(0))
        return attendOneOp().call(q, k, v, mask);
    return attendManyOp().call(q, k, v, mask);
}

Tensor NativeStep::step(const Tensor& ids, int64_t past, const Tensor& cache, const Tensor& crossKv,
                        const Tensor& mask) const {
    const int64_t t = ids.size(1), end = past + t;
    // Decoder.embed
    const Tensor positions = at::arange(past, past + t, torch::kInt64).add(m_positionOffset);
    Tensor x = at::embedding(m_embedTokens, ids).mul(m_embedScale);
    x = norm(x.add(at::embedding(m_embedPositions, positions).unsqueeze(0)), m_embedNorm);
    // Decoder.causal_mask for one token
    const Tensor selfMask = at::zeros({1, 1, 1, past + 1}, x.scalar_type());
    for (size_t i = 0; i < m_layers.size(); ++i) {
        const Layer& l = m_layers[i];
        const Tensor layerCache = cache.select(0, int64_t(i));
        const Tensor selfK = layerCache.select(0, 0), selfV = layerCache.select(0, 1);
        // Attention.keys_values, then the cache written
        const Tensor k = split(linear(x, l.self.k), l.self), v = split(linear(x, l.self.v), l.self);
        selfK.slice(2, past, end).copy_(k);
        selfV.slice(2, past, end).copy_(v);
        // DecoderLayer.forward
        Tensor a =
            attend(query(x, l.self), selfK.slice(2, 0, end), selfV.slice(2, 0, end), selfMask);
        x = norm(x.add(linear(merge(a), l.self.out)), l.selfNorm);
        const Tensor q = query(x, l.cross);
        const Tensor layerKv = crossKv.select(0, int64_t(i));
        const Tensor crossK = layerKv.select(0, 0), crossV = layerKv.select(0, 1);
        if (crossK.size(0) == 1 && q.size(0) > 1 && q.size(2) == 1)
            a = attend(q.transpose(0, 2), crossK, crossV, mask).transpose(0, 2);
        else
            a = attend(q, crossK, crossV, mask);
        x = norm(x.add(linear(merge(a), l.cross.out)), l.crossNorm);
        x = norm(x.add(linear(at::gelu(linear(x, l.fc1)), l.fc2)), l.finalNorm);
    }
    g_stepsRun.fetch_add(1, std::memory_order_relaxed);
    return linear(x.select(1, -1), m_lmHead).add(m_finalLogitsBias);
}

} // namespace florence::detail

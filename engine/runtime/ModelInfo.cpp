// What a loaded Model reports of itself: its manifest and options, the bytes its weights and a
// decoding step read, its parameters' shapes and how its precision was applied.
#include "runtime/ModelImpl.h"

#include <algorithm>
#include <set>

namespace florence {

std::vector<std::pair<std::string, std::vector<int64_t>>> Model::parameterShapes() const {
    std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
    for (const char* role : {"vision", "text_encoder", "decoder"})
        for (const auto& p : m_impl->module(role).named_parameters(true))
            shapes.emplace_back(std::string(role) + "/" + p.name, p.value.sizes().vec());
    return shapes;
}

std::vector<std::string> Model::int8Modules() const {
    return m_impl->int8Modules;
}

Precision Model::encoderPrecision() const {
    return m_impl->encoderPrecision;
}

std::string Model::precisionNote() const {
    return m_impl->precisionNote;
}

bool Model::nativeStep() const {
    return m_impl->nativeStep != nullptr;
}

int64_t Model::decodeStepBytes(int encoderTokens) const {
    const Manifest& m = m_impl->manifest;
    std::set<const void*> seen;
    int64_t bytes = 0;
    for (const auto& p : m_impl->decoder.named_parameters(true)) {
        const torch::Tensor& t = p.value;
        const std::string& name = p.name;
        if (name.find("encoder_attn.k_proj") != std::string::npos ||
            name.find("encoder_attn.v_proj") != std::string::npos)
            continue; // computed once per request, not per step
        // The embeddings: one row per step. The token embedding is the LM head's tensor in
        // float32 and bfloat16, which the LM head reads whole; in int8 the head has its own.
        if (name.find("embed_positions") != std::string::npos ||
            name.find("embed_tokens") != std::string::npos) {
            bytes += t.size(1) * t.element_size();
            continue;
        }
        if (!seen.insert(t.data_ptr()).second)
            continue;
        bytes += t.numel() * t.element_size();
        if (t.is_quantized()) // int8: a float64 scale per output channel
            bytes += t.size(0) * int64_t(sizeof(double));
    }
    for (const auto& b : m_impl->decoder.named_buffers(true))
        bytes += b.value.numel() * b.value.element_size();
    // Cross-attention keys and values, float32.
    bytes += int64_t(m.decoderLayers) * 2 * encoderTokens * m.dModel * 4;
    return bytes;
}

int64_t Model::weightBytes() const {
    std::set<const void*> seen;
    int64_t bytes = 0;
    for (const torch::jit::Module* m : {&m_impl->vision, &m_impl->textEncoder, &m_impl->decoder}) {
        for (const auto& p : m->named_parameters(true))
            if (p.value.numel() > 0 && seen.insert(p.value.data_ptr()).second)
                bytes += p.value.numel() * p.value.element_size();
        for (const auto& b : m->named_buffers(true))
            if (b.value.numel() > 0 && seen.insert(b.value.data_ptr()).second)
                bytes += b.value.numel() * b.value.element_size();
    }
    return bytes;
}

const Manifest& Model::manifest() const {
    return m_impl->manifest;
}
const Tokenizer& Model::tokenizer() const {
    return m_impl->tokenizer;
}
const LoadOptions& Model::loadOptions() const {
    return m_impl->options;
}
double Model::loadMs() const {
    return m_impl->loadMs;
}

GenerationOptions Model::defaultOptions() const {
    GenerationOptions o;
    const Manifest& m = m_impl->manifest;
    o.numBeams = m.numBeams;
    o.noRepeatNgramSize = m.noRepeatNgramSize;
    o.lengthPenalty = m.lengthPenalty;
    o.earlyStopping = m.earlyStopping;
    o.maxNewTokens = std::min(m.maxNewTokens, m.maxPositions);
    o.ignoreEos = m.ignoreEos;
    return o;
}

} // namespace florence

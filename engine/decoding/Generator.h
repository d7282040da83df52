// Internal to the engine (includes LibTorch; never include it from ui/ or app/).
//
// Greedy and beam search over a decoder backend, with the logits processors of Hugging Face's
// generate() as Florence-2 configures them: no-repeat n-gram, forced <s> first, forced </s> at
// the length limit. The backend hides whether a key/value cache is used, so both modes run the
// very same search and give the same tokens.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace florence::detail {

class DecodeBackend {
public:
    virtual ~DecodeBackend() = default;
    // Starts a run with `batch` hypotheses of at most `capacity` tokens each.
    virtual void begin(int batch, int capacity) = 0;
    // Logits [batch, vocab] for the next token of every hypothesis; sequences[b] is hypothesis
    // b from the decoder start token on, all of the same length.
    virtual torch::Tensor next(const std::vector<std::vector<int64_t>>& sequences) = 0;
    // Hypothesis b continues from what hypothesis origin[b] was before this step.
    virtual void reorder(const std::vector<int64_t>& origin) = 0;
};

struct SearchSettings {
    int numBeams = 1;
    int maxLength = 21; // decoder start token included
    int noRepeatNgramSize = 3;
    double lengthPenalty = 1.0;
    bool earlyStopping = true;
    bool ignoreEos = false;
    int64_t decoderStartId = 2;
    int64_t eosId = 2;
    int64_t padId = 1;       // fed to batch rows that have finished
    int64_t forcedBosId = 0; // -1: none
    int64_t forcedEosId = 2; // -1: none
};

struct SearchCallbacks {
    // Called after every step, for every unfinished row of the batch (`index`), with the token
    // appended to its best hypothesis and that hypothesis; return false to stop.
    std::function<bool(int index, int step, int64_t id, const std::vector<int64_t>& best,
                       double stepMs)>
        onStep;
    const std::atomic<bool>* cancel = nullptr;
};

struct SearchResult {
    std::vector<int64_t> sequence; // decoder start token first
    // One per token after the decoder start: its log-probability under the search that chose
    // it, from the processed scores (Hugging Face's compute_transition_scores with normalized
    // logits): greedy, the log-softmax of the processed logits; beam, the processed
    // log-probability in the hypothesis returned. A forced token has 0.
    std::vector<float> tokenLogprobs;
    double score = 0;
    bool cancelled = false;
    std::vector<double> stepMs;
};

// Greedy search over `batch` independent requests decoded together (the backend's rows); a row
// that has finished is fed <pad> until all have, as Hugging Face does.
std::vector<SearchResult> greedySearchBatch(DecodeBackend& backend, const SearchSettings& settings,
                                            int batch, const SearchCallbacks& callbacks);
SearchResult beamSearch(DecodeBackend& backend, const SearchSettings& settings,
                        const SearchCallbacks& callbacks);

// Tokens that would repeat an n-gram of `sequence` (Hugging Face's no_repeat_ngram_size).
std::vector<int64_t> bannedNgramTokens(const std::vector<int64_t>& sequence, int n);

} // namespace florence::detail

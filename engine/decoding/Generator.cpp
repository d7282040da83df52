#include "decoding/Generator.h"

#include "Ops.h"
#include <florence/stats.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace florence::detail {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// log(softmax(row)[best]) for a row that may hold -inf (banned or forced-out tokens), best the
// row's largest. The sum of exponentials runs on the operators' vector kernels: a scalar loop
// in double took about 0.2 ms of every step, a twentieth of an int8 one, while the other core
// waited.
float logSoftmaxOfBest(const float* row, int64_t vocab, int64_t best) {
    const float top = row[best];
    if (top == kNegInf)
        return kNegInf;
    return static_cast<float>(-std::log(ops::sumExp(row, vocab, top)));
}

bool cancelled(const SearchCallbacks& callbacks) {
    return callbacks.cancel && callbacks.cancel->load(std::memory_order_relaxed);
}

// The logits processors, applied in Hugging Face's order to one row of scores. `curLen` is the
// length of the hypothesis before the token being chosen.
void processRow(float* row, int64_t vocab, const std::vector<int64_t>& sequence,
                const SearchSettings& s) {
    const int curLen = static_cast<int>(sequence.size());
    if (s.noRepeatNgramSize > 0)
        for (int64_t id : bannedNgramTokens(sequence, s.noRepeatNgramSize))
            if (id >= 0 && id < vocab)
                row[id] = kNegInf;
    auto forceOnly = [&](int64_t id) {
        // The manifest's ids are range-checked at load; this guards every other way in (a
        // module whose logits are narrower than the manifest's vocabulary).
        if (id < 0 || id >= vocab)
            throw std::out_of_range("forced token " + std::to_string(id) +
                                    " is outside the model's " + std::to_string(vocab) +
                                    " logits");
        std::fill(row, row + vocab, kNegInf);
        row[id] = 0.0f;
    };
    if (s.forcedBosId >= 0 && curLen == 1)
        forceOnly(s.forcedBosId);
    if (s.forcedEosId >= 0 && curLen == s.maxLength - 1)
        forceOnly(s.forcedEosId);
    else if (s.ignoreEos && s.eosId >= 0 && s.eosId < vocab)
        row[s.eosId] = kNegInf;
}

struct Hypothesis {
    std::vector<int64_t> tokens;
    std::vector<float> logprobs; // per token after the decoder start; </s> included when it ended so
    double score;
};

// Hugging Face's BeamHypotheses for one input.
class FinishedHypotheses {
public:
    FinishedHypotheses(int numBeams, double lengthPenalty, bool earlyStopping)
        : m_numBeams(numBeams), m_lengthPenalty(lengthPenalty), m_earlyStopping(earlyStopping) {}

    void add(std::vector<int64_t> tokens, std::vector<float> logprobs, double sumLogprobs,
             int generatedLen) {
        const double score = sumLogprobs / std::pow(std::max(generatedLen, 1), m_lengthPenalty);
        if (static_cast<int>(m_hyps.size()) < m_numBeams || score > worstScore()) {
            m_hyps.push_back({std::move(tokens), std::move(logprobs), score});
            if (static_cast<int>(m_hyps.size()) > m_numBeams) {
                auto worst = std::min_element(
                    m_hyps.begin(), m_hyps.end(),
                    [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
                m_hyps.erase(worst);
            }
        }
    }

    bool isDone(double bestSumLogprobs, int curLen) const {
        if (static_cast<int>(m_hyps.size()) < m_numBeams)
            return false;
        if (m_earlyStopping)
            return true;
        const double highest = bestSumLogprobs / std::pow(std::max(curLen, 1), m_lengthPenalty);
        return worstScore() >= highest;
    }

    const Hypothesis* best() const {
        if (m_hyps.empty())
            return nullptr;
        return &*std::max_element(
            m_hyps.begin(), m_hyps.end(),
            [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
    }

private:
    double worstScore() const {
        double worst = std::numeric_limits<double>::infinity();
        for (const auto& h : m_hyps)
            worst = std::min(worst, h.score);
        return worst;
    }

    int m_numBeams;
    double m_lengthPenalty;
    bool m_earlyStopping;
    std::vector<Hypothesis> m_hyps;
};

} // namespace

std::vector<int64_t> bannedNgramTokens(const std::vector<int64_t>& sequence, int n) {
    std::vector<int64_t> banned;
    const int len = static_cast<int>(sequence.size());
    if (n <= 0 || len + 1 < n)
        return banned;
    // The n-1 tokens that end the sequence; every earlier n-gram starting with them bans its
    // last token.
    const int prefix = n - 1;
    for (int start = 0; start + n <= len; ++start) {
        bool match = true;
        for (int k = 0; k < prefix && match; ++k)
            match = sequence[start + k] == sequence[len - prefix + k];
        if (match)
            banned.push_back(sequence[start + prefix]);
    }
    return banned;
}

std::vector<SearchResult> greedySearchBatch(DecodeBackend& backend, const SearchSettings& s,
                                            int batch, const SearchCallbacks& callbacks) {
    std::vector<SearchResult> results(batch);
    std::vector<std::vector<int64_t>> seqs(batch, std::vector<int64_t>{s.decoderStartId});
    std::vector<bool> finished(batch, false);
    int open = batch;
    backend.begin(batch, s.maxLength);
    int step = 0;
    bool stopped = false;
    while (open > 0 && static_cast<int>(seqs[0].size()) < s.maxLength) {
        if (cancelled(callbacks)) {
            stopped = true;
            break;
        }
        const auto start = Clock::now();
        torch::Tensor logits = backend.next(seqs).to(torch::kFloat32).contiguous();
        const int64_t vocab = logits.size(1);
        std::vector<int64_t> chosen(batch, s.padId);
        for (int b = 0; b < batch; ++b) {
            if (finished[b])
                continue;
            float* row = logits.data_ptr<float>() + b * vocab;
            processRow(row, vocab, seqs[b], s);
            chosen[b] = std::max_element(row, row + vocab) - row;
            results[b].tokenLogprobs.push_back(logSoftmaxOfBest(row, vocab, chosen[b]));
        }
        for (int b = 0; b < batch; ++b)
            seqs[b].push_back(chosen[b]);
        const double ms = msSince(start);
        for (int b = 0; b < batch; ++b) {
            if (finished[b])
                continue;
            results[b].stepMs.push_back(ms);
            if (callbacks.onStep && !callbacks.onStep(b, step, chosen[b], seqs[b], ms))
                stopped = true;
            if (chosen[b] == s.eosId && !s.ignoreEos) {
                finished[b] = true;
                --open;
                results[b].sequence = seqs[b];
            }
        }
        ++step;
        if (stopped)
            break;
    }
    for (int b = 0; b < batch; ++b) {
        if (!finished[b]) {
            results[b].sequence = seqs[b];
            results[b].cancelled = stopped;
        }
    }
    return results;
}

namespace {

// The beams after one step: the best 2 x beams candidates in order, a candidate ending in </s>
// going to the finished hypotheses (only from the top `beams` ranks, as Hugging Face does), the
// others continuing until `beams` are found.
struct NextBeams {
    std::vector<std::vector<int64_t>> seqs;
    std::vector<std::vector<float>> logprobs; // per token after the start, as SearchResult's
    std::vector<double> scores;
    std::vector<int64_t> origin; // the beam each continues
};

NextBeams chooseNextBeams(const std::vector<std::vector<int64_t>>& seqs,
                          const std::vector<std::vector<float>>& logprobs,
                          const std::vector<double>& beamScores, const float* values,
                          const int64_t* indices, int64_t vocab, int curLen,
                          const SearchSettings& s, FinishedHypotheses& finished) {
    const int nb = static_cast<int>(seqs.size());
    NextBeams n;
    std::vector<std::vector<int64_t>>& nextSeqs = n.seqs;
    std::vector<double>& nextScores = n.scores;
    std::vector<int64_t>& origin = n.origin;
    for (int rank = 0; rank < 2 * nb && static_cast<int>(nextSeqs.size()) < nb; ++rank) {
        const int64_t beam = indices[rank] / vocab;
        const int64_t token = indices[rank] % vocab;
        const double score = values[rank];
        // The token's own processed log-probability: the running score less the beam's.
        std::vector<float> tokenLogprobs = logprobs[beam];
        tokenLogprobs.push_back(static_cast<float>(score - beamScores[beam]));
        if (token == s.eosId && !s.ignoreEos) {
            if (rank >= nb)
                continue;
            if (score > kNegInf)
                finished.add(seqs[beam], std::move(tokenLogprobs), score, curLen - 1);
        } else {
            std::vector<int64_t> next = seqs[beam];
            next.push_back(token);
            nextSeqs.push_back(std::move(next));
            n.logprobs.push_back(std::move(tokenLogprobs));
            nextScores.push_back(score);
            origin.push_back(beam);
        }
    }
    // Forced </s> on the last step leaves no live continuation; keep the shapes.
    while (static_cast<int>(nextSeqs.size()) < nb) {
        std::vector<int64_t> next = seqs[0];
        next.push_back(s.eosId);
        nextSeqs.push_back(std::move(next));
        std::vector<float> forced = logprobs[0];
        forced.push_back(0.0f);
        n.logprobs.push_back(std::move(forced));
        nextScores.push_back(-1e9);
        origin.push_back(0);
    }
    return n;
}

// The best hypothesis to show: the best finished one once the search is over, else the best
// live beam.
std::vector<int64_t> shownHypothesis(const std::vector<std::vector<int64_t>>& seqs,
                                     const FinishedHypotheses& finished, bool done,
                                     const SearchSettings& s) {
    const Hypothesis* best = finished.best();
    std::vector<int64_t> shown = seqs[0];
    if (done && best) {
        shown = best->tokens;
        if (static_cast<int>(shown.size()) < s.maxLength)
            shown.push_back(s.eosId);
    }
    return shown;
}

// The search's answer once the loop has ended.
SearchResult finishBeamSearch(SearchResult result, const std::vector<std::vector<int64_t>>& seqs,
                              const std::vector<std::vector<float>>& logprobs,
                              const std::vector<double>& beamScores, bool done,
                              const SearchSettings& s, FinishedHypotheses& finished) {
    const int nb = static_cast<int>(seqs.size());
    if (result.cancelled) {
        result.sequence = seqs[0];
        result.tokenLogprobs = logprobs[0];
        result.score = beamScores[0];
        return result;
    }
    // Hugging Face's finalize(): live beams join the finished ones, the best is returned and
    // gets </s> appended when it ended by </s> below the length limit.
    if (!done)
        for (int b = 0; b < nb; ++b)
            finished.add(seqs[b], logprobs[b], beamScores[b],
                         static_cast<int>(seqs[b].size()) - 1);
    const Hypothesis* best = finished.best();
    if (!best) {
        result.sequence = seqs[0];
        result.tokenLogprobs = logprobs[0];
        return result;
    }
    result.sequence = best->tokens;
    result.tokenLogprobs = best->logprobs;
    result.score = best->score;
    if (static_cast<int>(result.sequence.size()) < s.maxLength &&
        (result.sequence.empty() || result.sequence.back() != s.eosId))
        result.sequence.push_back(s.eosId);
    // A live beam that reached the length limit without </s> gets none appended above, so its
    // log-probabilities already match; one that ended by </s> carries that token's.
    result.tokenLogprobs.resize(result.sequence.size() - 1, 0.0f);
    return result;
}

} // namespace

SearchResult beamSearch(DecodeBackend& backend, const SearchSettings& s,
                        const SearchCallbacks& callbacks) {
    const int nb = std::max(1, s.numBeams);
    SearchResult result;
    std::vector<std::vector<int64_t>> seqs(nb, std::vector<int64_t>{s.decoderStartId});
    std::vector<std::vector<float>> logprobs(nb); // per beam, one per token after the start
    // Only the first beam is live at the start, so the first step does not pick the same token
    // nb times.
    std::vector<double> beamScores(nb, -1e9);
    beamScores[0] = 0.0;
    FinishedHypotheses finished(nb, s.lengthPenalty, s.earlyStopping);
    backend.begin(nb, s.maxLength);
    bool done = false;

    while (!done && static_cast<int>(seqs[0].size()) < s.maxLength) {
        if (cancelled(callbacks)) {
            result.cancelled = true;
            break;
        }
        const auto start = Clock::now();
        torch::Tensor logits = backend.next(seqs).to(torch::kFloat32);
        torch::Tensor scores = torch::log_softmax(logits, -1).contiguous();
        const int64_t vocab = scores.size(1);
        float* data = scores.data_ptr<float>();
        for (int b = 0; b < nb; ++b)
            processRow(data + b * vocab, vocab, seqs[b], s);
        scores +=
            torch::tensor(std::vector<float>(beamScores.begin(), beamScores.end())).unsqueeze(1);
        auto [topValues, topIndices] = scores.view({-1}).topk(2 * nb);
        const float* values = topValues.data_ptr<float>();
        const int64_t* indices = topIndices.data_ptr<int64_t>();

        const int curLen = static_cast<int>(seqs[0].size()) + 1; // as HF's process() counts
        NextBeams next = chooseNextBeams(seqs, logprobs, beamScores, values, indices, vocab,
                                         curLen, s, finished);
        done = finished.isDone(values[0], curLen);
        seqs = std::move(next.seqs);
        logprobs = std::move(next.logprobs);
        beamScores = std::move(next.scores);
        backend.reorder(next.origin);

        const double ms = msSince(start);
        result.stepMs.push_back(ms);
        const std::vector<int64_t> shown = shownHypothesis(seqs, finished, done, s);
        const int64_t id = shown.back();
        if (callbacks.onStep &&
            !callbacks.onStep(0, static_cast<int>(result.stepMs.size()) - 1, id, shown, ms)) {
            result.cancelled = true;
            break;
        }
    }

    return finishBeamSearch(std::move(result), seqs, logprobs, beamScores, done, s, finished);
}

} // namespace florence::detail

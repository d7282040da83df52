#include "decoding/StreamedText.h"

#include <algorithm>

namespace florence::detail {

void StreamedText::update(const std::vector<int64_t>& best, TokenEvent& e) {
    const bool extends =
        best.size() == m_ids.size() + 1 && std::equal(m_ids.begin(), m_ids.end(), best.begin());
    if (extends) {
        e.textDelta = m_decoder.push(best.back());
        m_text += e.textDelta;
        m_ids.push_back(best.back());
    } else {
        m_decoder = Tokenizer::StreamDecoder(*m_tokenizer);
        std::string full;
        for (int64_t id : best)
            full += m_decoder.push(id);
        if (full.compare(0, m_text.size(), m_text) == 0) {
            e.textDelta = full.substr(m_text.size());
        } else {
            e.rewound = true;
            e.textDelta = full;
        }
        m_text = std::move(full);
        m_ids = best;
    }
}

} // namespace florence::detail

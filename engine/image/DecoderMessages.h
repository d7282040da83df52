// What OpenCV's image decoders say, kept for the one-line error instead of printed. OpenCV's
// imdecode catches a decoder's exception itself and writes it to std::cerr ("imdecode_(''):
// can't read data: OpenCV(4.6.0) …bitstrm.cpp:102: error: …"), and its TIFF decoder logs a
// warning line first; neither can be turned off per call. Internal.
//
//   florence::detail::DecoderMessages messages;   // on this thread, until it goes out of scope
//   cv::Mat m = cv::imdecode(buffer, flags);
//   if (m.empty()) throw ImageError(name + ": " + messages.reason());
#pragma once

#include <string>

namespace florence::detail {

// While one lives, what OpenCV writes to std::cerr from this thread and the messages of the
// errors it raises on this thread are kept here, not printed. Other threads' output passes
// through unchanged (OpenCV's log lines go to std::cerr as well). The first one made installs
// the capture, once for the process.
class DecoderMessages {
public:
    DecoderMessages();
    ~DecoderMessages();
    DecoderMessages(const DecoderMessages&) = delete;
    DecoderMessages& operator=(const DecoderMessages&) = delete;

    // The first error OpenCV raised ("Unexpected end of input stream"), or what it printed,
    // or "" when it said nothing.
    std::string reason() const;

private:
    bool m_nested; // a capture was already active on this thread: it keeps collecting
};

} // namespace florence::detail

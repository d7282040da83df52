#include "image/DecoderMessages.h"

#include <opencv2/core/utility.hpp>

#include <iostream>
#include <mutex>
#include <streambuf>

namespace florence::detail {

namespace {

struct Capture {
    bool active = false;
    std::string error;   // the first cv::error message
    std::string printed; // what went to std::cerr
};

thread_local Capture t_capture;

// std::cerr's buffer for the whole process: a thread with a capture active writes into it,
// every other thread into the original buffer. It keeps no buffer of its own, so each write
// reaches the original at once, as std::cerr's always did.
class FilterBuffer : public std::streambuf {
public:
    explicit FilterBuffer(std::streambuf* original) : m_original(original) {}

protected:
    int_type overflow(int_type c) override {
        if (traits_type::eq_int_type(c, traits_type::eof()))
            return traits_type::not_eof(c);
        if (t_capture.active) {
            t_capture.printed.push_back(traits_type::to_char_type(c));
            return c;
        }
        return m_original->sputc(traits_type::to_char_type(c));
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        if (t_capture.active) {
            t_capture.printed.append(s, size_t(n));
            return n;
        }
        return m_original->sputn(s, n);
    }
    int sync() override { return t_capture.active ? 0 : m_original->pubsync(); }

private:
    std::streambuf* m_original;
};

// cv::error calls this before it throws; returning 0 keeps its usual course (the throw).
int onOpenCvError(int, const char*, const char* message, const char*, int, void*) {
    if (t_capture.active && t_capture.error.empty() && message)
        t_capture.error = message;
    return 0;
}

void installOnce() {
    static std::once_flag once;
    std::call_once(once, [] {
        cv::redirectError(onOpenCvError);
        // Never destroyed: std::cerr is flushed and used by destructors after main returns.
        std::cerr.rdbuf(new FilterBuffer(std::cerr.rdbuf()));
    });
}

// The message of an OpenCV exception as imdecode prints it ("imdecode_(''): can't read data:
// OpenCV(4.6.0) …bitstrm.cpp:102: error: (-2:Unspecified error) Unexpected end of input stream
// in function 'readBlock'") down to what went wrong; other text down to its last line.
std::string printedReason(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    const size_t status = text.rfind("error: (");
    const size_t close = status == std::string::npos ? status : text.find(") ", status);
    if (close != std::string::npos) {
        text = text.substr(close + 2);
        const size_t where = text.rfind(" in function ");
        return where == std::string::npos ? text : text.substr(0, where);
    }
    const size_t newline = text.rfind('\n');
    return newline == std::string::npos ? text : text.substr(newline + 1);
}

} // namespace

DecoderMessages::DecoderMessages() : m_nested(t_capture.active) {
    installOnce();
    if (!m_nested)
        t_capture = Capture{true, {}, {}};
}

DecoderMessages::~DecoderMessages() {
    if (!m_nested)
        t_capture.active = false;
}

std::string DecoderMessages::reason() const {
    if (!t_capture.error.empty())
        return t_capture.error;
    return printedReason(t_capture.printed);
}

} // namespace florence::detail

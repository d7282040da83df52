#include "image/Orientation.h"

#include <cstring>

namespace florence::detail {

namespace {

// The orientation tag (0x0112) of IFD0 of a TIFF-structured EXIF block, or 1.
int tiffOrientation(const uint8_t* t, size_t n) {
    if (n < 8)
        return 1;
    const bool le = t[0] == 'I' && t[1] == 'I';
    if (!le && !(t[0] == 'M' && t[1] == 'M'))
        return 1;
    auto u16 = [&](size_t at) -> uint32_t {
        return le ? uint32_t(t[at]) | uint32_t(t[at + 1]) << 8
                  : uint32_t(t[at]) << 8 | uint32_t(t[at + 1]);
    };
    auto u32 = [&](size_t at) -> uint32_t {
        return le ? u16(at) | u16(at + 2) << 16 : u16(at) << 16 | u16(at + 2);
    };
    const size_t ifd = u32(4);
    if (ifd > n || n - ifd < 2)
        return 1;
    const size_t count = u16(ifd);
    for (size_t i = 0; i < count; ++i) {
        const size_t e = ifd + 2 + 12 * i;
        if (e + 12 > n)
            break;
        if (u16(e) == 0x0112 && u16(e + 2) == 3) { // SHORT
            const uint32_t v = u16(e + 8);
            return v >= 1 && v <= 8 ? int(v) : 1;
        }
    }
    return 1;
}

int jpegOrientation(const std::vector<uint8_t>& d) {
    size_t pos = 2;
    while (pos + 4 <= d.size() && d[pos] == 0xff) {
        const uint8_t marker = d[pos + 1];
        if (marker == 0xda || marker == 0xd9) // the image data: no more metadata
            break;
        const size_t length = size_t(d[pos + 2]) << 8 | d[pos + 3];
        if (length < 2 || pos + 2 + length > d.size())
            break;
        const uint8_t* body = d.data() + pos + 4;
        if (marker == 0xe1 && length >= 8 && std::memcmp(body, "Exif\0\0", 6) == 0)
            return tiffOrientation(body + 6, length - 8);
        pos += 2 + length;
    }
    return 1;
}

int pngOrientation(const std::vector<uint8_t>& d) {
    size_t pos = 8;
    while (pos + 12 <= d.size()) {
        const size_t length =
            size_t(d[pos]) << 24 | size_t(d[pos + 1]) << 16 | size_t(d[pos + 2]) << 8 | d[pos + 3];
        if (length > d.size() - pos - 12)
            break;
        const uint8_t* type = d.data() + pos + 4;
        if (std::memcmp(type, "eXIf", 4) == 0)
            return tiffOrientation(type + 4, length);
        if (std::memcmp(type, "IDAT", 4) == 0) // OpenCV reads eXIf only before the image data
            break;
        pos += 12 + length;
    }
    return 1;
}

} // namespace

int exifOrientation(const std::vector<uint8_t>& d) {
    if (d.size() > 3 && d[0] == 0xff && d[1] == 0xd8)
        return jpegOrientation(d);
    if (d.size() > 8 && d[0] == 0x89 && d[1] == 'P' && d[2] == 'N' && d[3] == 'G')
        return pngOrientation(d);
    return 1;
}

void applyOrientation(cv::Mat& m, int orientation) {
    // OpenCV's ApplyExifOrientation (imgcodecs/src/loadsave.cpp), case by case.
    switch (orientation) {
    case 2:
        cv::flip(m, m, 1);
        break;
    case 3:
        cv::flip(m, m, -1);
        break;
    case 4:
        cv::flip(m, m, 0);
        break;
    case 5:
        cv::transpose(m, m);
        break;
    case 6:
        cv::transpose(m, m);
        cv::flip(m, m, 1);
        break;
    case 7:
        cv::transpose(m, m);
        cv::flip(m, m, -1);
        break;
    case 8:
        cv::transpose(m, m);
        cv::flip(m, m, 0);
        break;
    default:
        break;
    }
}

} // namespace florence::detail

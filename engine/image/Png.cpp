#include "image/Png.h"

#include <florence/error.h>

#include <png.h>
#include <zlib.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>

namespace florence::detail {

namespace {

uint32_t be32(const uint8_t* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

// The PNG is checked whole before libpng sees it, so a damaged file is refused with what is
// wrong in a user's words rather than libpng's first complaint: chunk lengths and CRCs, the
// IDAT stream (inflated into a scratch buffer, nothing kept), its size against what the header
// needs, and each row's filter byte.

uint32_t chunkCrc(const uint8_t* typeAndData, size_t n) {
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) { // crc32 takes a uInt length
        const uInt step = uInt(std::min<size_t>(n, 1u << 30));
        crc = crc32(crc, typeAndData, step);
        typeAndData += step;
        n -= step;
    }
    return uint32_t(crc);
}

// The rows the filtered image data holds: (count, bytes per row without the filter byte),
// one entry per Adam7 pass for an interlaced image.
std::vector<std::pair<int64_t, int64_t>> pngRows(int64_t w, int64_t h, int bitsPerPixel,
                                                 bool interlaced) {
    auto rowBytes = [&](int64_t width) { return (width * bitsPerPixel + 7) / 8; };
    if (!interlaced)
        return {{h, rowBytes(w)}};
    static const int x0[7] = {0, 4, 0, 2, 0, 1, 0}, dx[7] = {8, 8, 4, 4, 2, 2, 1};
    static const int y0[7] = {0, 0, 4, 0, 2, 0, 1}, dy[7] = {8, 8, 8, 4, 4, 2, 2};
    std::vector<std::pair<int64_t, int64_t>> rows;
    for (int p = 0; p < 7; ++p) {
        const int64_t pw = (w - x0[p] + dx[p] - 1) / dx[p];
        const int64_t ph = (h - y0[p] + dy[p] - 1) / dy[p];
        if (pw > 0 && ph > 0)
            rows.emplace_back(ph, rowBytes(pw));
    }
    return rows;
}

// Inflates `idat` and checks it holds at least `rows`, each starting with a valid filter type
// (libpng ignores data after the last row). Returns what is wrong, or "".
std::string checkPngPixels(const std::vector<std::pair<const uint8_t*, size_t>>& idat,
                           const std::vector<std::pair<int64_t, int64_t>>& rows) {
    z_stream z{};
    if (inflateInit(&z) != Z_OK)
        return "cannot inflate";
    std::vector<uint8_t> scratch(1 << 16);
    size_t segment = 0;
    int64_t rowsLeft = rows.empty() ? 0 : rows[0].first;
    int64_t untilFilter = 0; // bytes of output before the next row's filter byte
    std::string fault;
    int ret = Z_OK;
    auto complete = [&] {
        while (segment < rows.size() && rowsLeft == 0 && ++segment < rows.size())
            rowsLeft = rows[segment].first;
        return segment >= rows.size() && untilFilter == 0;
    };
    bool done = false;
    for (size_t part = 0; part < idat.size() && !done && fault.empty(); ++part) {
        z.next_in = const_cast<uint8_t*>(idat[part].first);
        z.avail_in = uInt(idat[part].second);
        while (z.avail_in > 0 && !done && fault.empty()) {
            z.next_out = scratch.data();
            z.avail_out = uInt(scratch.size());
            ret = inflate(&z, Z_NO_FLUSH);
            if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR) {
                fault = "its compressed pixel data is corrupt";
                break;
            }
            const int64_t produced = int64_t(scratch.size() - z.avail_out);
            for (int64_t at = 0; at < produced && !done && fault.empty();) {
                if (untilFilter > 0) {
                    const int64_t skip = std::min(untilFilter, produced - at);
                    untilFilter -= skip;
                    at += skip;
                } else if (complete()) {
                    done = true;
                } else if (scratch[size_t(at)] > 4) {
                    fault = "a row has an unknown filter type";
                } else {
                    --rowsLeft;
                    untilFilter = rows[segment].second;
                    ++at;
                }
            }
            if (ret == Z_STREAM_END)
                done = true;
            else if (ret == Z_BUF_ERROR && z.avail_in > 0 && produced == 0)
                fault = "its compressed pixel data is corrupt";
        }
    }
    inflateEnd(&z);
    if (!fault.empty())
        return fault;
    if (!complete())
        return "it holds less pixel data than its size needs";
    return {};
}

// Bits per pixel of a valid IHDR chunk, 0 when it is not one.
int pngBitsPerPixel(const uint8_t* ihdr, uint32_t length) {
    if (length != 13 || ihdr[10] != 0 || ihdr[11] != 0 || ihdr[12] > 1)
        return 0;
    const int depth = ihdr[8];
    switch (ihdr[9]) { // colour type: the depths the PNG specification allows for each
    case 0:
        return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16 ? depth : 0;
    case 3:
        return depth == 1 || depth == 2 || depth == 4 || depth == 8 ? depth : 0;
    case 2:
    case 4:
    case 6: {
        const int channels = ihdr[9] == 2 ? 3 : ihdr[9] == 4 ? 2 : 4;
        return depth == 8 || depth == 16 ? depth * channels : 0;
    }
    default:
        return 0;
    }
}

// The PNG with its critical chunks only (IHDR, PLTE, IDAT, IEND; checked by checkPng). The
// others change nothing OpenCV returns (it applies no gamma or colour profile, and alpha is
// dropped; the EXIF orientation is read from the original), but libpng prints warnings about
// damaged ones (iCCP, zTXt) on stderr.
std::vector<uint8_t> pngCriticalChunks(const std::vector<uint8_t>& d) {
    std::vector<uint8_t> out(d.begin(), d.begin() + 8);
    for (size_t pos = 8; pos + 12 <= d.size();) {
        const size_t length = be32(&d[pos]);
        const size_t end = pos + 12 + length;
        if (end > d.size())
            break;
        if (d[pos + 4] >= 'A' && d[pos + 4] <= 'Z')
            out.insert(out.end(), d.begin() + std::ptrdiff_t(pos), d.begin() + std::ptrdiff_t(end));
        if (std::equal(&d[pos + 4], &d[pos + 8], "IEND"))
            break;
        pos = end;
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Decoding. libpng reports through callbacks: an error must not return (it longjmps back here),
// a warning may. Between setjmp and longjmp only plain data lives on the stack.

struct PngSource {
    const uint8_t* data;
    size_t size;
    size_t pos;
};

struct PngMessages {
    std::jmp_buf jump;
    char error[200];
};

void readFromMemory(png_structp png, png_bytep out, size_t n) {
    auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
    if (source->size - source->pos < n)
        png_error(png, "it ends before its last chunk");
    std::memcpy(out, source->data + source->pos, n);
    source->pos += n;
}

[[noreturn]] void onPngError(png_structp png, png_const_charp message) {
    auto* messages = static_cast<PngMessages*>(png_get_error_ptr(png));
    std::snprintf(messages->error, sizeof messages->error, "%s", message);
    std::longjmp(messages->jump, 1);
}

// Dropped: checkPng has already proved the pixel data whole, so what libpng still warns about
// is data it ignores ("IDAT: Too much image data": bytes after the last row, "Extra compressed
// data") and changes no pixel.
void onPngWarning(png_structp, png_const_charp) {}

struct PngHeader {
    png_uint_32 width = 0;
    png_uint_32 height = 0;
    int bitDepth = 0;
    int colorType = 0;
};

bool readHeader(png_structp png, png_infop info, PngHeader* header) {
    auto* messages = static_cast<PngMessages*>(png_get_error_ptr(png));
    if (setjmp(messages->jump))
        return false;
    png_read_info(png, info);
    png_get_IHDR(png, info, &header->width, &header->height, &header->bitDepth, &header->colorType,
                 nullptr, nullptr, nullptr);
    return true;
}

// The transformations cv::imdecode asks of libpng for IMREAD_ANYDEPTH | IMREAD_ANYCOLOR, in its
// order, so the pixels are the ones OpenCV would return: 16-bit samples kept in the machine's
// byte order, alpha and transparency dropped, palettes and grey depths below 8 expanded, colour
// as BGR, grey with alpha as BGR, grey as one channel.
bool readPixels(png_structp png, png_infop info, const PngHeader& header, int channels,
                png_bytepp rows) {
    auto* messages = static_cast<PngMessages*>(png_get_error_ptr(png));
    if (setjmp(messages->jump))
        return false;
    const uint16_t one = 1;
    if (*reinterpret_cast<const uint8_t*>(&one) == 1) // little-endian
        png_set_swap(png);
    png_set_strip_alpha(png);
    if (header.colorType == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if ((header.colorType & PNG_COLOR_MASK_COLOR) == 0 && header.bitDepth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if ((header.colorType & PNG_COLOR_MASK_COLOR) && channels > 1)
        png_set_bgr(png);
    else if (channels > 1)
        png_set_gray_to_rgb(png);
    else
        png_set_rgb_to_gray(png, 1, 0.299, 0.587);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    png_read_image(png, rows);
    png_read_end(png, nullptr);
    return true;
}

// What cv::imdecode makes of the colour type: grey stays one channel, everything else (grey
// with alpha included) becomes three.
int outputChannels(int colorType) {
    return colorType == PNG_COLOR_TYPE_GRAY ? 1 : 3;
}

} // namespace

void checkPng(const std::vector<uint8_t>& d, const std::string& name) {
    auto damaged = [&](const std::string& what) {
        return ImageError(name + ": the PNG file is damaged (" + what + ")");
    };
    std::vector<std::pair<const uint8_t*, size_t>> idat;
    int64_t width = 0, height = 0;
    int bitsPerPixel = 0;
    bool interlaced = false, ended = false;
    size_t pos = 8;
    while (!ended) {
        if (d.size() - pos < 12)
            throw damaged("it ends before its last chunk");
        const uint32_t length = be32(&d[pos]);
        if (length > 0x7fffffffu || d.size() - pos - 12 < length)
            throw damaged("it ends before its last chunk");
        const std::string type(d.begin() + std::ptrdiff_t(pos + 4),
                               d.begin() + std::ptrdiff_t(pos + 8));
        const uint8_t* data = &d[pos + 8];
        // Critical chunks (upper-case first letter) only: libpng skips a damaged ancillary one.
        const bool critical = type[0] >= 'A' && type[0] <= 'Z';
        if (critical && chunkCrc(&d[pos + 4], size_t(length) + 4) != be32(data + length))
            throw damaged("chunk " + type + " fails its checksum");
        if (type == "IHDR") {
            bitsPerPixel = pngBitsPerPixel(data, length);
            if (bitsPerPixel == 0)
                throw damaged("its header is invalid");
            width = be32(data);
            height = be32(data + 4);
            interlaced = data[12] == 1;
        } else if (type == "IDAT") {
            idat.emplace_back(data, length);
        }
        ended = type == "IEND";
        pos += size_t(length) + 12;
    }
    if (idat.empty() || bitsPerPixel == 0)
        throw damaged("it has no pixel data");
    const std::string fault =
        checkPngPixels(idat, pngRows(width, height, bitsPerPixel, interlaced));
    if (!fault.empty())
        throw damaged(fault);
}

cv::Mat decodePng(const std::vector<uint8_t>& d, const std::string& name) {
    const std::vector<uint8_t> critical = pngCriticalChunks(d);
    PngMessages messages{};
    png_structp png =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, &messages, onPngError, onPngWarning);
    png_infop info = png ? png_create_info_struct(png) : nullptr;
    if (!info) {
        png_destroy_read_struct(&png, nullptr, nullptr);
        throw ImageError(name + ": out of memory while decoding the PNG");
    }
    PngSource source{critical.data(), critical.size(), 0};
    png_set_read_fn(png, &source, readFromMemory);
    PngHeader header;
    cv::Mat image;
    bool ok = readHeader(png, info, &header);
    if (ok) {
        const int channels = outputChannels(header.colorType);
        image.create(int(header.height), int(header.width),
                     CV_MAKETYPE(header.bitDepth == 16 ? CV_16U : CV_8U, channels));
        std::vector<png_bytep> rows(header.height);
        for (png_uint_32 y = 0; y < header.height; ++y)
            rows[y] = image.ptr<uint8_t>(int(y));
        ok = readPixels(png, info, header, channels, rows.data());
    }
    png_destroy_read_struct(&png, &info, nullptr);
    if (!ok)
        throw ImageError(name + ": the PNG file is damaged (" +
                         (messages.error[0] ? messages.error : "unreadable") + ")");
    return image;
}
} // namespace florence::detail

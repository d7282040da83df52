#include <florence/image.h>

#include "image/DecoderMessages.h"
#include "image/JpegCheck.h"
#include "image/Orientation.h"
#include "image/Png.h"
#include "platform/RegularFile.h"

#include <QFileInfo>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sys/stat.h>
#include <utility>

namespace florence {

namespace {

// ---------------------------------------------------------------------------------------------
// Header peeking: the pixel count is checked before the decoder allocates anything, so a
// small file that claims a gigantic canvas (a decompression bomb) is refused cheaply.

uint32_t be16(const uint8_t* p) {
    return (uint32_t(p[0]) << 8) | p[1];
}
uint32_t be32(const uint8_t* p) {
    return (be16(p) << 16) | be16(p + 2);
}
uint32_t le16(const uint8_t* p) {
    return (uint32_t(p[1]) << 8) | p[0];
}
uint32_t le32(const uint8_t* p) {
    return (le16(p + 2) << 16) | le16(p);
}

using Dimensions = std::pair<int64_t, int64_t>;

std::optional<Dimensions> pngDimensions(const std::vector<uint8_t>& d) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
    if (d.size() < 24 || !std::equal(sig, sig + 8, d.begin()) ||
        std::string(d.begin() + 12, d.begin() + 16) != "IHDR")
        return std::nullopt;
    return Dimensions{be32(&d[16]), be32(&d[20])};
}

std::optional<Dimensions> jpegDimensions(const std::vector<uint8_t>& d) {
    if (d.size() < 4 || d[0] != 0xff || d[1] != 0xd8)
        return std::nullopt;
    size_t pos = 2;
    while (pos + 4 <= d.size()) {
        if (d[pos] != 0xff)
            return std::nullopt;
        const uint8_t marker = d[pos + 1];
        if (marker == 0xff) { // fill byte
            ++pos;
            continue;
        }
        const size_t length = be16(&d[pos + 2]);
        // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC) carry the frame size.
        if (marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 &&
            marker != 0xcc) {
            if (pos + 9 > d.size())
                return std::nullopt;
            return Dimensions{be16(&d[pos + 7]), be16(&d[pos + 5])};
        }
        if (marker == 0xda || length < 2) // start of scan before any frame header
            return std::nullopt;
        pos += 2 + length;
    }
    return std::nullopt;
}

std::optional<Dimensions> bmpDimensions(const std::vector<uint8_t>& d) {
    if (d.size() < 26 || d[0] != 'B' || d[1] != 'M')
        return std::nullopt;
    const uint32_t infoSize = le32(&d[14]);
    if (infoSize == 12) // OS/2 BITMAPCOREHEADER: 16-bit sizes
        return Dimensions{le16(&d[18]), le16(&d[20])};
    // Height is negative for top-down bitmaps.
    const auto width = int32_t(le32(&d[18]));
    const auto height = int32_t(le32(&d[22]));
    return Dimensions{std::abs(int64_t(width)), std::abs(int64_t(height))};
}

// An uncompressed BMP holds every row, each padded to 4 bytes, after its pixel data offset;
// OpenCV would allocate the declared canvas and then fail on the missing rows. Returns what is
// wrong, or "". RLE-compressed rows may end early by design, so they are not bounded here.
std::string bmpDataProblem(const std::vector<uint8_t>& d, const Dimensions& dims) {
    const bool os2 = le32(&d[14]) == 12;
    if (d.size() < (os2 ? 26u : 34u))
        return "it ends inside its header";
    const uint32_t bitsPerPixel = os2 ? le16(&d[24]) : le16(&d[28]);
    const uint32_t compression = os2 ? 0 : le32(&d[30]);
    if (compression != 0 && compression != 3 && compression != 6)
        return {};
    const uint64_t rowBytes = (uint64_t(dims.first) * bitsPerPixel + 31) / 32 * 4;
    const uint64_t needed = uint64_t(le32(&d[10])) + rowBytes * uint64_t(dims.second);
    if (bitsPerPixel == 0 || needed <= d.size())
        return {};
    return std::to_string(d.size()) + " bytes cannot hold the " + std::to_string(dims.first) + "×" +
           std::to_string(dims.second) + " pixels it declares";
}

std::optional<Dimensions> webpDimensions(const std::vector<uint8_t>& d) {
    if (d.size() < 30 || std::string(d.begin(), d.begin() + 4) != "RIFF" ||
        std::string(d.begin() + 8, d.begin() + 12) != "WEBP")
        return std::nullopt;
    const std::string chunk(d.begin() + 12, d.begin() + 16);
    const uint8_t* p = &d[20];
    if (chunk == "VP8 ")
        return Dimensions{le16(p + 6) & 0x3fff, le16(p + 8) & 0x3fff};
    if (chunk == "VP8L") {
        const uint32_t bits = le32(p + 1);
        return Dimensions{(bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1};
    }
    if (chunk == "VP8X") {
        const uint32_t w = p[4] | (p[5] << 8) | (p[6] << 16);
        const uint32_t h = p[7] | (p[8] << 8) | (p[9] << 16);
        return Dimensions{int64_t(w) + 1, int64_t(h) + 1};
    }
    return std::nullopt;
}

std::optional<Dimensions> tiffDimensions(const std::vector<uint8_t>& d) {
    if (d.size() < 8)
        return std::nullopt;
    const bool little = d[0] == 'I' && d[1] == 'I';
    const bool big = d[0] == 'M' && d[1] == 'M';
    if (!little && !big)
        return std::nullopt;
    auto u16 = [&](size_t at) { return little ? le16(&d[at]) : be16(&d[at]); };
    auto u32 = [&](size_t at) { return little ? le32(&d[at]) : be32(&d[at]); };
    if (u16(2) != 42) // BigTIFF and others: refused (no size to check before decoding)
        return std::nullopt;
    const size_t ifd = u32(4);
    if (ifd > d.size() || d.size() - ifd < 2)
        return std::nullopt;
    const size_t count = u16(ifd);
    int64_t width = -1, height = -1;
    for (size_t i = 0; i < count; ++i) {
        const size_t entry = ifd + 2 + i * 12;
        if (entry + 12 > d.size())
            break;
        const uint32_t tag = u16(entry);
        const uint32_t type = u16(entry + 2);
        if ((tag == 256 || tag == 257) && type != 3 && type != 4)
            return std::nullopt; // a size of another type: refused rather than guessed
        const int64_t value = type == 3 ? u16(entry + 8) : u32(entry + 8);
        if (tag == 256)
            width = value;
        else if (tag == 257)
            height = value;
    }
    if (width < 0 || height < 0)
        return std::nullopt;
    return Dimensions{width, height};
}

// The formats the app lists, told by their signature. Everything else OpenCV could decode
// (JPEG 2000, OpenEXR, Radiance HDR, PFM, PNM, Sun raster, GDAL and GDCM formats, …) is refused
// before OpenCV sees the bytes: its decoders for those read the declared canvas first and
// allocate it (a 3 KB JPEG 2000 declaring 30000x30000 took 4.7 GB).
enum class Format { Unknown, Png, Jpeg, Bmp, WebP, Tiff, Gif };

Format formatOf(const std::vector<uint8_t>& d) {
    auto starts = [&](std::initializer_list<uint8_t> sig, size_t at = 0) {
        if (d.size() < at + sig.size())
            return false;
        return std::equal(sig.begin(), sig.end(), d.begin() + std::ptrdiff_t(at));
    };
    if (starts({0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a}))
        return Format::Png;
    if (starts({0xff, 0xd8, 0xff}))
        return Format::Jpeg;
    if (starts({'B', 'M'}))
        return Format::Bmp;
    if (starts({'R', 'I', 'F', 'F'}) && starts({'W', 'E', 'B', 'P'}, 8))
        return Format::WebP;
    if (starts({'I', 'I', 42, 0}) || starts({'M', 'M', 0, 42}))
        return Format::Tiff;
    if (starts({'G', 'I', 'F', '8', '7', 'a'}) || starts({'G', 'I', 'F', '8', '9', 'a'}))
        return Format::Gif;
    return Format::Unknown;
}

// Why the size could not be read from a file that starts like `format`.
std::string unreadableHeader(Format format) {
    switch (format) {
    case Format::Tiff:
        return "not an image this program reads: its TIFF header gives no size (a damaged file, "
               "or a variant such as BigTIFF)";
    case Format::Png:
        return "the file starts like a PNG but has no valid PNG header (a damaged file, or "
               "another kind of file named as a PNG)";
    case Format::Jpeg:
        return "the file starts like a JPEG but has no valid frame header (a damaged file)";
    case Format::Bmp:
        return "the file starts like a BMP but has no valid BMP header (a damaged file)";
    case Format::WebP:
        return "the file starts like a WebP but has no valid WebP header (a damaged file)";
    default:
        return "not an image this program reads: its size cannot be read from its header";
    }
}

std::optional<Dimensions> headerDimensions(Format format, const std::vector<uint8_t>& d) {
    switch (format) {
    case Format::Png:
        return pngDimensions(d);
    case Format::Jpeg:
        return jpegDimensions(d);
    case Format::Bmp:
        return bmpDimensions(d);
    case Format::WebP:
        return webpDimensions(d);
    case Format::Tiff:
        return tiffDimensions(d);
    case Format::Gif:
    case Format::Unknown:
        break;
    }
    return std::nullopt;
}

std::string sizeText(int64_t w, int64_t h) {
    return std::to_string(w) + "×" + std::to_string(h);
}

void checkPixelCount(int64_t w, int64_t h, const std::string& name) {
    // Divided, not multiplied: declared sides reach 2^32 each, whose product overflows.
    if (w > 0 && h > 0 && w > kMaxImagePixels / h)
        throw ImageError(name + ": the image is too large (" + sizeText(w, h) +
                         " pixels; at most " + std::to_string(kMaxImagePixels / 1'000'000) +
                         " megapixels are accepted)");
}

// Brings any depth OpenCV may return to 8 bits the way PIL's convert("RGB") sees it.
cv::Mat toDepth8(const cv::Mat& in) {
    cv::Mat out;
    switch (in.depth()) {
    case CV_8U:
        return in;
    case CV_16U:
        // PIL unpacks 16-bit samples by keeping the high byte (rawmode "RGB;16B").
        in.convertTo(out, CV_8U, 1.0 / 256.0, -0.5 + 1.0 / 512.0);
        // convertTo rounds, so bias by -0.5 (+ a hair) to obtain floor(v / 256) == v >> 8.
        return out;
    case CV_8S:
        in.convertTo(out, CV_8U, 1.0, 128.0);
        return out;
    case CV_16S:
        in.convertTo(out, CV_8U, 1.0 / 256.0, 128.0);
        return out;
    case CV_32S:
        in.convertTo(out, CV_8U, 1.0 / 16777216.0, 128.0);
        return out;
    default: // floating point (TIFF float, PFM, HDR, EXR): 0..1 is the usual range
        in.convertTo(out, CV_8U, 255.0);
        return out;
    }
}

RgbImage fromMat(const cv::Mat& decoded, const std::string& name) {
    if (decoded.empty() || decoded.total() == 0)
        throw ImageError(name + ": the image has no pixels");
    checkPixelCount(decoded.cols, decoded.rows, name);
    cv::Mat bits8 = toDepth8(decoded);
    cv::Mat rgb;
    switch (bits8.channels()) {
    case 1:
        cv::cvtColor(bits8, rgb, cv::COLOR_GRAY2RGB);
        break;
    case 3:
        cv::cvtColor(bits8, rgb, cv::COLOR_BGR2RGB);
        break;
    case 4: // PIL's convert("RGB") drops alpha without compositing
        cv::cvtColor(bits8, rgb, cv::COLOR_BGRA2RGB);
        break;
    default:
        throw ImageError(name + ": unsupported number of color channels (" +
                         std::to_string(bits8.channels()) + ")");
    }
    RgbImage image;
    image.width = rgb.cols;
    image.height = rgb.rows;
    image.pixels.resize(size_t(image.width) * size_t(image.height) * 3);
    const size_t rowBytes = size_t(image.width) * 3;
    for (int y = 0; y < rgb.rows; ++y)
        std::copy_n(rgb.ptr<uint8_t>(y), rowBytes, image.pixels.data() + rowBytes * size_t(y));
    return image;
}

// ---------------------------------------------------------------------------------------------
// Pillow's resampling (libImaging/Resample.c, Pillow 9.x), reproduced step by step so the
// model sees the very pixels it saw in training: same kernel, same support, same rounding of
// coefficients to fixed point and the same 8-bit clip between the two passes.

constexpr int kPrecisionBits = 32 - 8 - 2;

double bicubicFilter(double x) {
    constexpr double a = -0.5;
    if (x < 0.0)
        x = -x;
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}
constexpr double kBicubicSupport = 2.0;

// Fixed-point weights for one axis: output i reads `count[i]` inputs starting at `first[i]`,
// with weights at weights[i * taps ...].
struct AxisCoefficients {
    int taps = 0;
    std::vector<int> first;
    std::vector<int> count;
    std::vector<int32_t> weights;
};

AxisCoefficients precomputeCoefficients(int inSize, int outSize) {
    // Pillow passes the box as float; for whole-image boxes these are exact integers.
    const float in0 = 0.0f;
    const float in1 = float(inSize);
    double filterscale = double(in1 - in0) / outSize;
    const double scale = filterscale;
    if (filterscale < 1.0)
        filterscale = 1.0;
    const double support = kBicubicSupport * filterscale;
    AxisCoefficients c;
    c.taps = int(std::ceil(support)) * 2 + 1;
    c.first.resize(size_t(outSize));
    c.count.resize(size_t(outSize));
    c.weights.assign(size_t(outSize) * size_t(c.taps), 0);
    std::vector<double> k(size_t(c.taps));
    for (int xx = 0; xx < outSize; ++xx) {
        const double center = in0 + (xx + 0.5) * scale;
        const double ss = 1.0 / filterscale;
        // (int) truncates toward zero exactly like the C code; negatives clamp to 0 anyway.
        int xmin = int(center - support + 0.5);
        if (xmin < 0)
            xmin = 0;
        int xmax = int(center + support + 0.5);
        if (xmax > inSize)
            xmax = inSize;
        xmax -= xmin;
        double ww = 0.0;
        for (int x = 0; x < xmax; ++x) {
            const double w = bicubicFilter((x + xmin - center + 0.5) * ss);
            k[size_t(x)] = w;
            ww += w;
        }
        int32_t* out = &c.weights[size_t(xx) * size_t(c.taps)];
        for (int x = 0; x < xmax; ++x) {
            double w = k[size_t(x)];
            if (ww != 0.0)
                w /= ww;
            // normalize_coeffs_8bpc: round half away from zero.
            out[x] = w < 0 ? int32_t(-0.5 + w * (1 << kPrecisionBits))
                           : int32_t(0.5 + w * (1 << kPrecisionBits));
        }
        c.first[size_t(xx)] = xmin;
        c.count[size_t(xx)] = xmax;
    }
    return c;
}

inline uint8_t clip8(int32_t v) {
    // Arithmetic shift floors, as in Pillow's clip8 lookup.
    const int32_t shifted = v >> kPrecisionBits;
    return uint8_t(shifted < 0 ? 0 : (shifted > 255 ? 255 : shifted));
}

constexpr int32_t kHalf = 1 << (kPrecisionBits - 1);

// Horizontal pass over source rows [rowBegin, rowEnd) into `out` (outWidth × rows, RGB).
void resampleHorizontal(const uint8_t* in, int inWidth, int rowBegin, int rowEnd, uint8_t* out,
                        int outWidth, const AxisCoefficients& c) {
    for (int y = rowBegin; y < rowEnd; ++y) {
        const uint8_t* src = in + size_t(y) * size_t(inWidth) * 3;
        uint8_t* dst = out + size_t(y - rowBegin) * size_t(outWidth) * 3;
        for (int xx = 0; xx < outWidth; ++xx) {
            const int32_t* k = &c.weights[size_t(xx) * size_t(c.taps)];
            const uint8_t* s = src + size_t(c.first[size_t(xx)]) * 3;
            const int n = c.count[size_t(xx)];
            int32_t s0 = kHalf, s1 = kHalf, s2 = kHalf;
            for (int x = 0; x < n; ++x) {
                s0 += s[3 * x + 0] * k[x];
                s1 += s[3 * x + 1] * k[x];
                s2 += s[3 * x + 2] * k[x];
            }
            dst[3 * xx + 0] = clip8(s0);
            dst[3 * xx + 1] = clip8(s1);
            dst[3 * xx + 2] = clip8(s2);
        }
    }
}

// Vertical pass; `rowOffset` is the index of in's first row in the coefficient numbering.
// Taps run in the outer loop so the inner loop walks whole rows and vectorizes; the integer
// sums are identical to Pillow's tap-by-tap order.
void resampleVertical(const uint8_t* in, int rowOffset, int width, uint8_t* out, int outHeight,
                      const AxisCoefficients& c) {
    const size_t rowValues = size_t(width) * 3;
    std::vector<int32_t> acc(rowValues);
    for (int yy = 0; yy < outHeight; ++yy) {
        std::fill(acc.begin(), acc.end(), kHalf);
        const int32_t* k = &c.weights[size_t(yy) * size_t(c.taps)];
        const int first = c.first[size_t(yy)] - rowOffset;
        for (int y = 0; y < c.count[size_t(yy)]; ++y) {
            const uint8_t* src = in + size_t(first + y) * rowValues;
            const int32_t w = k[y];
            int32_t* a = acc.data();
            for (size_t i = 0; i < rowValues; ++i)
                a[i] += int32_t(src[i]) * w;
        }
        uint8_t* dst = out + size_t(yy) * rowValues;
        for (size_t i = 0; i < rowValues; ++i)
            dst[i] = clip8(acc[i]);
    }
}

const char* formatName(Format format) {
    switch (format) {
    case Format::Png:
        return "PNG";
    case Format::Jpeg:
        return "JPEG";
    case Format::Bmp:
        return "BMP";
    case Format::WebP:
        return "WebP";
    case Format::Tiff:
        return "TIFF";
    default:
        return "image";
    }
}

// The pixels as stored (no orientation applied), as cv::imdecode returns them with ANYDEPTH
// (16-bit samples kept) and ANYCOLOR (grey as one channel, alpha dropped). PNGs go to libpng
// directly; what OpenCV's other decoders print or raise ends in the one-line error.
cv::Mat decodePixels(Format format, const std::vector<uint8_t>& encoded, const std::string& name) {
    if (format == Format::Png)
        return detail::decodePng(encoded, name);
    const detail::DecoderMessages messages;
    cv::Mat decoded;
    try {
        const cv::Mat buffer(1, int(encoded.size()), CV_8U, const_cast<uint8_t*>(encoded.data()));
        decoded = cv::imdecode(buffer, cv::IMREAD_ANYDEPTH | cv::IMREAD_ANYCOLOR |
                                           cv::IMREAD_IGNORE_ORIENTATION);
    } catch (const cv::Exception& e) {
        throw ImageError(name + ": the " + formatName(format) + " file could not be decoded (" +
                         e.err + ")");
    }
    if (decoded.empty()) {
        const std::string why = messages.reason();
        throw ImageError(name + ": the " + formatName(format) + " file is damaged" +
                         (why.empty() ? std::string() : " (" + why + ")"));
    }
    return decoded;
}

} // namespace

RgbImage decodeImage(const std::vector<uint8_t>& encoded, const std::string& nameForErrors,
                     const DecodeOptions& options) {
    if (encoded.empty())
        throw ImageError(nameForErrors + ": the file is empty");
    const Format format = formatOf(encoded);
    if (format == Format::Unknown)
        throw ImageError(nameForErrors +
                         ": not an image in a supported format (PNG, JPEG, BMP, TIFF, WebP)");
    // Told apart from unknown data so the message says what to do: this OpenCV has no GIF
    // decoder, and a GIF is an animation the model would see one frame of anyway.
    if (format == Format::Gif)
        throw ImageError(nameForErrors +
                         ": GIF images are not read (supported: PNG, JPEG, BMP, TIFF, WebP); "
                         "save the frame you want as PNG and open that");
    // The size every accepted format declares is checked before the decoder allocates
    // anything, so a small file that claims a gigantic canvas is refused at once.
    // An animated WebP is a valid file this OpenCV cannot decode: said so, not "damaged".
    if (format == Format::WebP && encoded.size() > 20 &&
        std::string(encoded.begin() + 12, encoded.begin() + 16) == "VP8X" && (encoded[20] & 0x02))
        throw ImageError(nameForErrors +
                         ": animated WebP images are not read; save the frame you want as PNG "
                         "and open that");
    const std::optional<Dimensions> dims = headerDimensions(format, encoded);
    if (!dims)
        throw ImageError(nameForErrors + ": " + unreadableHeader(format));
    if (dims->first == 0 || dims->second == 0)
        throw ImageError(nameForErrors + ": the image has no pixels (" +
                         sizeText(dims->first, dims->second) + ")");
    checkPixelCount(dims->first, dims->second, nameForErrors);
    if (format == Format::Png)
        detail::checkPng(encoded, nameForErrors);
    if (format == Format::Bmp)
        if (const std::string why = bmpDataProblem(encoded, *dims); !why.empty())
            throw ImageError(nameForErrors + ": the BMP is damaged: " + why);
    if (format == Format::Jpeg)
        if (const std::string why = detail::jpegProblem(encoded); !why.empty())
            throw ImageError(nameForErrors + ": " + why);
    cv::Mat decoded = decodePixels(format, encoded, nameForErrors);
    const int orientation = options.exifRotate ? detail::exifOrientation(encoded) : 1;
    detail::applyOrientation(decoded, orientation);
    RgbImage image = fromMat(decoded, nameForErrors);
    image.orientationApplied = orientation != 1;
    return image;
}

RgbImage loadImage(const std::string& path, const DecodeOptions& options) {
    // Read ourselves rather than by cv::imread: a regular file only (a FIFO or device would
    // block or never end), up to a size limit, and the header is checked before decoding.
    // The path's bytes as given (stat, not QFileInfo): a name that is not UTF-8 is still found.
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
        throw ImageError(path + ": the file does not exist");
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw ImageError(path + ": is a folder, not an image file");
    std::string error;
    const QByteArray bytes = detail::readRegularFile(path, kMaxImageFileBytes, &error);
    if (!error.empty())
        throw ImageError(error);
    return decodeImage(std::vector<uint8_t>(bytes.begin(), bytes.end()), path, options);
}

RgbImage resizeBicubicPil(const RgbImage& image, int width, int height) {
    if (image.empty() || image.pixels.size() != size_t(image.width) * size_t(image.height) * 3)
        throw ImageError("resize: the source image is empty or inconsistent");
    if (width <= 0 || height <= 0)
        throw ImageError("resize: target size " + sizeText(width, height) + " is empty");
    if (width == image.width && height == image.height)
        return image; // Pillow returns a copy in this case too

    const bool needHorizontal = width != image.width;
    const bool needVertical = height != image.height;
    const AxisCoefficients vert = precomputeCoefficients(image.height, height);

    // Only the source rows the vertical pass reads are resampled horizontally.
    const int rowFirst = vert.first.front();
    const int rowLast = vert.first.back() + vert.count.back();

    const uint8_t* stage = image.pixels.data();
    int stageWidth = image.width;
    int stageOffset = 0;
    std::vector<uint8_t> temp;
    if (needHorizontal) {
        const AxisCoefficients horiz = precomputeCoefficients(image.width, width);
        temp.resize(size_t(width) * size_t(rowLast - rowFirst) * 3);
        resampleHorizontal(image.pixels.data(), image.width, rowFirst, rowLast, temp.data(), width,
                           horiz);
        stage = temp.data();
        stageWidth = width;
        stageOffset = rowFirst;
    }

    RgbImage out;
    out.width = width;
    out.height = height;
    if (needVertical) {
        out.pixels.resize(size_t(width) * size_t(height) * 3);
        resampleVertical(stage, stageOffset, stageWidth, out.pixels.data(), height, vert);
    } else {
        out.pixels = std::move(temp);
    }
    return out;
}

std::vector<float> preprocess(const RgbImage& image, int width, int height,
                              const std::array<float, 3>& mean, const std::array<float, 3>& std) {
    const RgbImage resized = resizeBicubicPil(image, width, height);
    // A lookup per channel: only 256 distinct inputs, computed as the processor does
    // (rescale first, then normalize).
    float lut[3][256];
    for (int c = 0; c < 3; ++c)
        for (int v = 0; v < 256; ++v)
            lut[c][v] = (float(v) * (1.0f / 255.0f) - mean[size_t(c)]) / std[size_t(c)];
    const size_t plane = size_t(width) * size_t(height);
    std::vector<float> chw(plane * 3);
    const uint8_t* p = resized.pixels.data();
    for (size_t i = 0; i < plane; ++i) {
        chw[i] = lut[0][p[3 * i + 0]];
        chw[plane + i] = lut[1][p[3 * i + 1]];
        chw[2 * plane + i] = lut[2][p[3 * i + 2]];
    }
    return chw;
}

} // namespace florence

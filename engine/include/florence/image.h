// Image input: reading any image file OpenCV reads into 8-bit RGB, and turning it into the
// model's normalized input exactly as Florence-2's processor (PIL bicubic resize, rescale,
// normalize) does.
//
//   florence::RgbImage img = florence::loadImage("photo.jpg");      // throws ImageError
//   std::vector<float> chw = florence::preprocess(img, 768, 768, {0.485f, 0.456f, 0.406f},
//                                                 {0.229f, 0.224f, 0.225f});
#pragma once

#include <florence/error.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace florence {

// Interleaved 8-bit RGB, row-major, no padding.
struct RgbImage {
    int width = 0;
    int height = 0;
    std::vector<uint8_t> pixels; // width * height * 3
    // The file's EXIF orientation (JPEG, PNG) was applied: the image was turned or mirrored
    // upright, so its width, height and pixel coordinates are those of the upright picture.
    bool orientationApplied = false;

    bool empty() const { return width <= 0 || height <= 0; }
};

// Largest image accepted (in pixels); anything larger is refused with a clear error.
constexpr int64_t kMaxImagePixels = 100'000'000;
// Largest image file read (bytes); a 100-megapixel photo is well below it.
constexpr int64_t kMaxImageFileBytes = 256ll << 20;

// How an image file is turned into pixels.
struct DecodeOptions {
    // Apply the EXIF orientation of a JPEG or PNG (as image viewers show the photo). Off: the
    // pixels as stored, the frame Florence-2's Python processor sees (it does not rotate).
    bool exifRotate = true;
};

// Reads PNG, JPEG, BMP, TIFF and WebP (told by the file's signature, whatever its name; other
// formats, GIF included, are refused before any decoder sees them) with EXIF orientation
// applied unless `options` says not to; grayscale, alpha and 16-bit images become RGB8. Only
// regular files up to kMaxImageFileBytes; the size the header declares is checked against
// kMaxImagePixels before decoding, and a damaged JPEG is refused. Throws ImageError with a
// message naming the file.
RgbImage loadImage(const std::string& path, const DecodeOptions& options = {});
// Same from encoded bytes in memory (a pasted or dropped image).
RgbImage decodeImage(const std::vector<uint8_t>& encoded, const std::string& nameForErrors,
                     const DecodeOptions& options = {});

// Resize with PIL's bicubic filter (Image.resize(..., BICUBIC)), including its antialiasing
// support on downscale and its 8-bit rounding between the two passes.
RgbImage resizeBicubicPil(const RgbImage& image, int width, int height);

// resizeBicubicPil to width×height, scale by 1/255, normalize; returns planar CHW floats.
std::vector<float> preprocess(const RgbImage& image, int width, int height,
                              const std::array<float, 3>& mean, const std::array<float, 3>& std);

} // namespace florence

// PNGs checked whole and decoded by libpng with the program's own error and warning handlers.
// OpenCV's PNG decoder leaves libpng's defaults in place, which print "libpng warning: IDAT:
// Too much image data" and the like on stderr in the middle of the program's own output; here a
// libpng error becomes the one-line error naming the file, and nothing is printed. Internal.
//
//   florence::detail::checkPng(bytes, "scan.png");                  // throws ImageError
//   cv::Mat bgr = florence::detail::decodePng(bytes, "scan.png");   // as cv::imdecode would
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace florence::detail {

// Throws ImageError naming `name` when the PNG is damaged: chunk lengths and checksums of the
// critical chunks, the header, the compressed pixel data, its size against what the header
// needs, and each row's filter byte.
void checkPng(const std::vector<uint8_t>& d, const std::string& name);

// Decodes a PNG (checked by checkPng) into what cv::imdecode returns for it with
// IMREAD_ANYDEPTH | IMREAD_ANYCOLOR: one channel for grey, three (BGR) otherwise, alpha
// dropped, 8 or 16 bits as stored. Only the critical chunks are read: the others change
// nothing the model sees (no gamma, colour profile or alpha is applied; the EXIF orientation
// is read from the original bytes). Throws ImageError naming `name` on a libpng error.
cv::Mat decodePng(const std::vector<uint8_t>& d, const std::string& name);

} // namespace florence::detail

// The EXIF orientation of a JPEG (APP1) or PNG (eXIf), read here rather than left to OpenCV so
// the program knows whether it turned the image and can be told not to. Internal.
//
//   const int o = florence::detail::exifOrientation(bytes);   // 1 (upright) … 8
//   florence::detail::applyOrientation(mat, o);                // as OpenCV's imdecode would
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <vector>

namespace florence::detail {

// 1..8 as EXIF defines it; 1 when the file has no (valid) orientation tag.
int exifOrientation(const std::vector<uint8_t>& d);

// Turns `m` upright the way OpenCV's imdecode does for the same tag.
void applyOrientation(cv::Mat& m, int orientation);

} // namespace florence::detail

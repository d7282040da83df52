// Draws a parsed answer on its image: boxes with labels, OCR quadrilaterals, filled
// semi-transparent polygons; readable on light and dark images, at the original image size.
//
//   florence::RgbImage out = florence::drawAnswer(image, answer);
//   florence::saveAnnotatedImage(image, answer, "out.png");   // throws ImageError
#pragma once

#include <florence/answer.h>
#include <florence/image.h>

#include <string>

namespace florence {

// A copy of `image` with every item of `answer` drawn on it. Coordinates in the answer are in
// pixels of this image. Pure-text answers are drawn as a caption banner at the top.
RgbImage drawAnswer(const RgbImage& image, const ParsedAnswer& answer);

// drawAnswer, then write as PNG (or any format OpenCV writes, by extension). Throws ImageError
// naming the file when it cannot be written.
void saveAnnotatedImage(const RgbImage& image, const ParsedAnswer& answer, const std::string& path);

// Writes an RGB image to a file (format by extension). Throws ImageError naming the file.
void saveImage(const RgbImage& image, const std::string& path);
// What saveImage checks of `path` before encoding: an extension it writes, and what
// whyNotAFileDestination checks (not a folder, FIFO or device; a folder that exists and takes
// new files). Throws ImageError naming the file; callers check before a long run.
void checkImageDestination(const std::string& path);

} // namespace florence

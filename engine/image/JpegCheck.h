// A JPEG checked whole with libjpeg before OpenCV decodes it. OpenCV lets libjpeg print its
// warnings ("Corrupt JPEG data: premature end of data segment") to stderr and returns the image
// anyway, grey where the data ran out; here every warning is an error, and the message goes
// into the one-line error instead of stderr. Internal to the engine.
//
//   if (std::string why = florence::detail::jpegProblem(bytes); !why.empty())
//       throw ImageError(name + ": " + why);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace florence::detail {

// What is wrong with the JPEG in `d` (a warning or error of libjpeg, in its words, or entropy
// data too short for the declared size), or "" when it decodes cleanly. Decodes at 1/8 scale:
// every coefficient is read, but the memory and time of the full-size image are not spent.
std::string jpegProblem(const std::vector<uint8_t>& d);

} // namespace florence::detail

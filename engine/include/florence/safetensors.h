// Minimal reader for the safetensors format (u64 little-endian header size, JSON header,
// raw little-endian data), without the safetensors package.
//
//   florence::SafetensorsFile f = florence::SafetensorsFile::open("reference.safetensors");
//   std::vector<float> pv = f.toFloat("pixel_values");   // f16/bf16/f32/f64 → float
//   std::vector<int64_t> shape = f.tensor("pixel_values").shape;
#pragma once

#include <florence/error.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace florence {

struct SafetensorsTensor {
    std::string dtype; // "F16", "BF16", "F32", "F64", "I64", "I32", "U8", …
    std::vector<int64_t> shape;
    std::vector<uint8_t> data; // raw little-endian bytes
    int64_t numel() const;
};

class SafetensorsFile {
public:
    // Throws florence::Error naming the file on a missing, truncated or malformed file.
    static SafetensorsFile open(const std::string& path);

    bool contains(const std::string& name) const;
    const SafetensorsTensor& tensor(const std::string& name) const; // throws if absent
    std::vector<std::string> names() const;
    // Converts float types (F16, BF16, F32, F64) to float; throws for other types.
    std::vector<float> toFloat(const std::string& name) const;
    // Converts integer types to int64.
    std::vector<int64_t> toInt64(const std::string& name) const;

private:
    std::string m_path;
    std::map<std::string, SafetensorsTensor> m_tensors;
};

// Writes tensors in the safetensors format (used by tests and tools).
void writeSafetensors(const std::string& path, const std::map<std::string, SafetensorsTensor>& tensors);

float halfToFloat(uint16_t h);
float bfloat16ToFloat(uint16_t b);

} // namespace florence

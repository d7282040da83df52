#include <florence/safetensors.h>

#include "platform/RegularFile.h"

#include <QByteArray>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <tuple>

namespace florence {

namespace {

// A header larger than this is not a header but a damaged length field; the real checkpoints
// have headers of a few hundred kilobytes.
constexpr uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

int64_t dtypeSize(const std::string& dtype) {
    if (dtype == "F64" || dtype == "I64" || dtype == "U64")
        return 8;
    if (dtype == "F32" || dtype == "I32" || dtype == "U32")
        return 4;
    if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16")
        return 2;
    if (dtype == "I8" || dtype == "U8" || dtype == "BOOL")
        return 1;
    return 0;
}

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
    throw Error(path + ": not a valid safetensors file (" + problem + ")");
}

template <typename T> T readLe(const uint8_t* p) {
    // The format is little-endian, as is every platform this app ships on; memcpy keeps the
    // load free of alignment assumptions.
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

bool isInteger(double v) {
    return v >= 0 && v <= 9007199254740992.0 && std::floor(v) == v;
}

// The 8-byte header size and the JSON header it announces, checked against the file's size.
QJsonObject readHeader(QFile& file, const std::string& path, uint64_t fileSize,
                       uint64_t* headerSize) {
    if (fileSize < 8)
        fail(path, "the file is truncated: " + std::to_string(fileSize) + " bytes");
    uint8_t sizeBytes[8];
    if (file.read(reinterpret_cast<char*>(sizeBytes), 8) != 8)
        fail(path, "the size field could not be read");
    *headerSize = readLe<uint64_t>(sizeBytes);
    if (*headerSize > kMaxHeaderBytes)
        fail(path, "header size " + std::to_string(*headerSize) + " is implausible");
    if (*headerSize > fileSize - 8)
        fail(path, "the file is truncated: the header needs " + std::to_string(*headerSize) +
                       " bytes but only " + std::to_string(fileSize - 8) + " follow");

    QByteArray headerText(qsizetype(*headerSize), Qt::Uninitialized);
    if (file.read(headerText.data(), qint64(*headerSize)) != qint64(*headerSize))
        fail(path, "the header could not be read");
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(headerText, &parseError);
    if (parseError.error != QJsonParseError::NoError)
        fail(path, "header JSON: " + parseError.errorString().toStdString() + " at offset " +
                       std::to_string(parseError.offset));
    if (!doc.isObject())
        fail(path, "the header is not a JSON object");
    return doc.object();
}

// The tensor's shape into `tensor`; returns its element count.
uint64_t readShape(const std::string& path, const std::string& name, const QJsonObject& entry,
                   SafetensorsTensor& tensor) {
    if (!entry.value("shape").isArray())
        fail(path, "tensor '" + name + "' has no shape");
    uint64_t numel = 1;
    uint64_t nonZero = 1; // the product of the other sides, bounded even when one is 0
    for (const QJsonValue& dim : entry.value("shape").toArray()) {
        const double d = dim.toDouble(-1);
        if (!dim.isDouble() || !isInteger(d))
            fail(path, "tensor '" + name + "' has an invalid shape");
        tensor.shape.push_back(int64_t(d));
        if (d == 0) {
            numel = 0;
            continue;
        }
        // [2^32, 2^32, 0] holds no bytes but its other sides overflow any product taken
        // later: refused, as is any shape whose sides multiply past 2^62.
        if (nonZero > (uint64_t(1) << 62) / uint64_t(d))
            fail(path, "tensor '" + name + "' has an implausible shape");
        nonZero *= uint64_t(d);
        numel *= uint64_t(d);
    }
    return numel;
}

// Where the tensors' bytes are: after the size field and the header, to the end of the file.
struct DataSpan {
    uint64_t offset = 0;
    uint64_t size = 0;
};

struct ByteRange {
    uint64_t begin = 0, end = 0; // within the data
    std::string name;
    bool operator<(const ByteRange& o) const {
        return std::tie(begin, end, name) < std::tie(o.begin, o.end, o.name);
    }
};

// One header entry: its dtype, shape and byte range checked against each other and the data,
// then its bytes read. Returns the range it occupies.
ByteRange readTensor(QFile& file, const std::string& path, const std::string& name,
                     const QJsonObject& entry, const DataSpan& data, SafetensorsTensor& tensor) {
    tensor.dtype = entry.value("dtype").toString().toStdString();
    const int64_t elementSize = dtypeSize(tensor.dtype);
    if (elementSize == 0)
        fail(path, "tensor '" + name + "' has unknown dtype '" + tensor.dtype + "'");
    const uint64_t numel = readShape(path, name, entry, tensor);
    const QJsonArray offsets = entry.value("data_offsets").toArray();
    if (offsets.size() != 2 || !offsets[0].isDouble() || !offsets[1].isDouble() ||
        !isInteger(offsets[0].toDouble()) || !isInteger(offsets[1].toDouble()))
        fail(path, "tensor '" + name + "' has invalid data_offsets");
    const auto begin = uint64_t(offsets[0].toDouble());
    const auto end = uint64_t(offsets[1].toDouble());
    if (begin > end || end > data.size)
        fail(path, "tensor '" + name + "' lies outside the data (bytes " + std::to_string(begin) +
                       "–" + std::to_string(end) + " of " + std::to_string(data.size) +
                       "); the file may be truncated");
    if (numel > (uint64_t(1) << 62) / uint64_t(elementSize) ||
        end - begin != numel * uint64_t(elementSize))
        fail(path, "tensor '" + name + "' has " + std::to_string(end - begin) +
                       " bytes but its shape and dtype need " +
                       std::to_string(numel * uint64_t(elementSize)));
    tensor.data.resize(size_t(end - begin));
    if (!tensor.data.empty() &&
        (!file.seek(qint64(data.offset + begin)) ||
         file.read(reinterpret_cast<char*>(tensor.data.data()), qint64(tensor.data.size())) !=
             qint64(tensor.data.size())))
        fail(path, "tensor '" + name + "' could not be read");
    return ByteRange{begin, end, name};
}

// Two tensors over the same bytes are a forged file, not a checkpoint.
void checkNoOverlap(const std::string& path, std::vector<ByteRange> ranges) {
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i].begin < ranges[i - 1].end)
            fail(path, "tensors '" + ranges[i - 1].name + "' and '" + ranges[i].name + "' overlap");
}

} // namespace

int64_t SafetensorsTensor::numel() const {
    // A zero anywhere makes it empty, whatever the other sides (which open() bounds).
    if (std::find(shape.begin(), shape.end(), 0) != shape.end())
        return 0;
    int64_t n = 1;
    for (int64_t d : shape)
        if (d < 0 || __builtin_mul_overflow(n, d, &n))
            throw Error("safetensors tensor shape overflows");
    return n;
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
    // A regular file only: a FIFO or device would block or never end.
    std::string openError;
    int64_t regularSize = 0;
    const int fd = detail::openRegularFile(path, &regularSize, &openError);
    if (fd < 0)
        throw Error(openError);
    QFile file;
    if (!file.open(fd, QIODevice::ReadOnly, QFileDevice::AutoCloseHandle))
        throw Error(path + ": the file cannot be opened (" + file.errorString().toStdString() +
                    ")");
    const auto fileSize = uint64_t(file.size());
    uint64_t headerSize = 0;
    const QJsonObject header = readHeader(file, path, fileSize, &headerSize);
    const DataSpan data{8 + headerSize, fileSize - 8 - headerSize};

    SafetensorsFile result;
    result.m_path = path;
    std::vector<ByteRange> ranges;
    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string name = it.key().toStdString();
        if (name == "__metadata__")
            continue;
        if (!it.value().isObject())
            fail(path, "entry '" + name + "' is not an object");
        SafetensorsTensor tensor;
        const ByteRange range = readTensor(file, path, name, it.value().toObject(), data, tensor);
        if (range.end > range.begin)
            ranges.push_back(range);
        result.m_tensors.emplace(name, std::move(tensor));
    }
    checkNoOverlap(path, ranges);
    return result;
}

bool SafetensorsFile::contains(const std::string& name) const {
    return m_tensors.count(name) != 0;
}

const SafetensorsTensor& SafetensorsFile::tensor(const std::string& name) const {
    auto it = m_tensors.find(name);
    if (it == m_tensors.end())
        throw Error(m_path + ": has no tensor named '" + name + "'");
    return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> result;
    result.reserve(m_tensors.size());
    for (const auto& entry : m_tensors)
        result.push_back(entry.first);
    return result;
}

std::vector<float> SafetensorsFile::toFloat(const std::string& name) const {
    const SafetensorsTensor& t = tensor(name);
    const uint8_t* p = t.data.data();
    const size_t n = size_t(t.numel());
    std::vector<float> out(n);
    if (n == 0) {
        if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16" && t.dtype != "F64")
            throw Error(m_path + ": tensor '" + name + "' has dtype " + t.dtype +
                                     ", not a floating-point type");
        return out; // no memcpy from an empty vector's null data
    }
    if (t.dtype == "F32") {
        std::memcpy(out.data(), p, n * 4);
    } else if (t.dtype == "F16") {
        for (size_t i = 0; i < n; ++i)
            out[i] = halfToFloat(readLe<uint16_t>(p + 2 * i));
    } else if (t.dtype == "BF16") {
        for (size_t i = 0; i < n; ++i)
            out[i] = bfloat16ToFloat(readLe<uint16_t>(p + 2 * i));
    } else if (t.dtype == "F64") {
        for (size_t i = 0; i < n; ++i)
            out[i] = float(readLe<double>(p + 8 * i));
    } else {
        throw Error(m_path + ": tensor '" + name + "' has dtype " + t.dtype +
                    ", not a floating-point type");
    }
    return out;
}

std::vector<int64_t> SafetensorsFile::toInt64(const std::string& name) const {
    const SafetensorsTensor& t = tensor(name);
    const uint8_t* p = t.data.data();
    const size_t n = size_t(t.numel());
    std::vector<int64_t> out(n);
    for (size_t i = 0; i < n; ++i) {
        if (t.dtype == "I64")
            out[i] = readLe<int64_t>(p + 8 * i);
        else if (t.dtype == "I32")
            out[i] = readLe<int32_t>(p + 4 * i);
        else if (t.dtype == "I16")
            out[i] = readLe<int16_t>(p + 2 * i);
        else if (t.dtype == "I8")
            out[i] = int8_t(p[i]);
        else if (t.dtype == "U8" || t.dtype == "BOOL")
            out[i] = p[i];
        else if (t.dtype == "U16")
            out[i] = readLe<uint16_t>(p + 2 * i);
        else if (t.dtype == "U32")
            out[i] = readLe<uint32_t>(p + 4 * i);
        else if (t.dtype == "U64")
            out[i] = int64_t(readLe<uint64_t>(p + 8 * i));
        else
            throw Error(m_path + ": tensor '" + name + "' has dtype " + t.dtype +
                        ", not an integer type");
    }
    return out;
}

void writeSafetensors(const std::string& path,
                      const std::map<std::string, SafetensorsTensor>& tensors) {
    QJsonObject header;
    uint64_t offset = 0;
    for (const auto& [name, tensor] : tensors) {
        const int64_t elementSize = dtypeSize(tensor.dtype);
        if (elementSize == 0)
            throw Error(path + ": cannot write tensor '" + name + "' with unknown dtype '" +
                        tensor.dtype + "'");
        if (uint64_t(tensor.numel()) * uint64_t(elementSize) != tensor.data.size())
            throw Error(path + ": tensor '" + name + "' has " + std::to_string(tensor.data.size()) +
                        " bytes, which does not match its shape and dtype");
        QJsonArray shape;
        for (int64_t d : tensor.shape)
            shape.append(qint64(d));
        QJsonObject entry;
        entry.insert("dtype", QString::fromStdString(tensor.dtype));
        entry.insert("shape", shape);
        entry.insert("data_offsets",
                     QJsonArray{qint64(offset), qint64(offset + tensor.data.size())});
        header.insert(QString::fromStdString(name), entry);
        offset += tensor.data.size();
    }
    QByteArray text = QJsonDocument(header).toJson(QJsonDocument::Compact);
    // Pad with spaces so the data starts 8-byte aligned, as the reference writer does.
    while ((text.size() + 8) % 8 != 0)
        text.append(' ');

    QFile file(QString::fromStdString(path));
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate))
        throw Error(path + ": cannot be created for writing (" + file.errorString().toStdString() +
                    ")");
    const uint64_t headerSize = uint64_t(text.size());
    uint8_t sizeBytes[8];
    for (int i = 0; i < 8; ++i)
        sizeBytes[i] = uint8_t(headerSize >> (8 * i));
    bool ok = file.write(reinterpret_cast<const char*>(sizeBytes), 8) == 8 &&
              file.write(text) == text.size();
    for (const auto& entry : tensors)
        ok = ok && file.write(reinterpret_cast<const char*>(entry.second.data.data()),
                              qint64(entry.second.data.size())) == qint64(entry.second.data.size());
    if (!ok || !file.flush())
        throw Error(path + ": writing failed (" + file.errorString().toStdString() + ")");
}

float halfToFloat(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    uint32_t mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0x1f) { // inf / nan, keeping the payload
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else { // subnormal: normalize into a float32 normal
        int e = 113;
        while ((mantissa & 0x400u) == 0) {
            mantissa <<= 1;
            --e;
        }
        bits = sign | (uint32_t(e) << 23) | ((mantissa & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

float bfloat16ToFloat(uint16_t b) {
    const uint32_t bits = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

} // namespace florence

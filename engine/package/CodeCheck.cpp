#include "package/CodeCheck.h"

#include "platform/RegularFile.h"

#include <QCryptographicHash>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <set>
#include <sstream>
#include <unistd.h>
#include <zlib.h>

namespace florence::detail {

// Generated from code-allowlist.txt (and code-allowlist-previous.txt) at build time.
extern const char* const kCodeAllowlist;
extern const char* const kCurrentCodeAllowlist;

namespace {

constexpr uint64_t kMaxDirectoryBytes = 64ull << 20;
constexpr uint64_t kMaxCodeEntryBytes = 16ull << 20;
constexpr uint64_t kMaxCodeBytes = 64ull << 20;

std::string hexSha256(const std::string& bytes) {
    return QCryptographicHash::hash(QByteArrayView(bytes.data(), qsizetype(bytes.size())),
                                    QCryptographicHash::Sha256)
        .toHex()
        .toStdString();
}

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}

// Drops "___torch_mangle_<n>" with the '.' or '/' before it, then turns every run of digits
// into one '0' (see codehash.py: the numbering and the model's dimensions are not its code).
std::string normalizeCode(const std::string& in) {
    static const std::string mangle = "___torch_mangle_";
    std::string dropped;
    dropped.reserve(in.size());
    for (size_t i = 0; i < in.size();) {
        if ((in[i] == '.' || in[i] == '/') && in.compare(i + 1, mangle.size(), mangle) == 0 &&
            i + 1 + mangle.size() < in.size() && isDigit(in[i + 1 + mangle.size()])) {
            i += 1 + mangle.size();
            while (i < in.size() && isDigit(in[i]))
                ++i;
            continue;
        }
        dropped += in[i++];
    }
    std::string out;
    out.reserve(dropped.size());
    for (size_t i = 0; i < dropped.size();) {
        if (isDigit(dropped[i])) {
            out += '0';
            while (i < dropped.size() && isDigit(dropped[i]))
                ++i;
        } else {
            out += dropped[i++];
        }
    }
    return out;
}

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

bool isBlank(const std::string& line) {
    return std::all_of(line.begin(), line.end(), [](char c) { return isSpace(c) || c == '\n'; });
}

// "  name : " at two spaces of indentation: an attribute declaration of a class.
bool isAttribute(const std::string& line) {
    if (line.size() < 3 || line[0] != ' ' || line[1] != ' ')
        return false;
    size_t i = 2;
    auto ident0 = [](char c) {
        return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    };
    if (!ident0(line[i]))
        return false;
    while (i < line.size() && (ident0(line[i]) || isDigit(line[i])))
        ++i;
    return line.compare(i, 3, " : ") == 0;
}

void addBlocks(const std::string& data, std::set<std::string>& parts) {
    const std::string text = normalizeCode(data);
    std::vector<std::vector<std::string>> blocks;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        std::string line = text.substr(start, end - start);
        start = end + 1;
        if (isBlank(line))
            continue;
        // A class's methods are blocks of their own (their order is compilation order).
        if (!isSpace(line[0]) || line.rfind("  def ", 0) == 0 || blocks.empty())
            blocks.emplace_back();
        blocks.back().push_back(std::move(line));
    }
    for (auto& lines : blocks) {
        std::string joined;
        std::set<std::string> run;
        auto flush = [&] {
            for (const std::string& r : run) {
                if (!joined.empty())
                    joined += '\n';
                joined += r;
            }
            run.clear();
        };
        for (const std::string& line : lines) {
            if (isAttribute(line)) {
                run.insert(line);
                continue;
            }
            flush();
            if (!joined.empty())
                joined += '\n';
            joined += line;
        }
        flush();
        parts.insert(hexSha256(joined));
    }
}

uint16_t u16(const unsigned char* p) {
    return uint16_t(p[0] | p[1] << 8);
}
uint32_t u32(const unsigned char* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t u64(const unsigned char* p) {
    return uint64_t(u32(p)) | uint64_t(u32(p + 4)) << 32;
}

// A raw deflate stream (zip method 8) into exactly `size` bytes; empty optional-like flag false
// when it is damaged or does not inflate to that size (never writes past `size`).
bool inflateTo(const std::string& packed, uint64_t size, std::string* out) {
    out->assign(size, '\0');
    z_stream z{};
    if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
        return false;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
    z.avail_in = uInt(packed.size());
    z.next_out = reinterpret_cast<Bytef*>(out->data());
    z.avail_out = uInt(size);
    int rc = inflate(&z, Z_FINISH);
    if (rc == Z_BUF_ERROR && z.avail_out == 0 && size == 0)
        rc = Z_STREAM_END;
    const bool ok = rc == Z_STREAM_END && z.total_out == size;
    inflateEnd(&z);
    return ok;
}

class Reader {
public:
    Reader(const std::string& path) : m_path(path) {
        std::string error;
        m_fd = openRegularFile(path, &m_size, &error);
        if (m_fd < 0)
            throw ArchiveError(error);
    }
    ~Reader() {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    uint64_t size() const { return uint64_t(m_size); }

    std::string read(uint64_t offset, uint64_t length) {
        if (offset > size() || length > size() - offset)
            fail("points outside the file");
        std::string out(length, '\0');
        uint64_t done = 0;
        while (done < length) {
            const ssize_t n = ::pread(m_fd, out.data() + done, length - done, off_t(offset + done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                fail("cannot be read");
            done += uint64_t(n);
        }
        return out;
    }

    [[noreturn]] void fail(const std::string& what) const {
        throw ArchiveError(m_path + " is not a TorchScript archive this program reads: its zip " +
                           "directory " + what);
    }

private:
    std::string m_path;
    int m_fd = -1;
    int64_t m_size = 0;
};

// Where the central directory is and how many entries it holds.
struct ZipDirectory {
    uint64_t entries = 0;
    uint64_t size = 0;
    uint64_t offset = 0;
};

ZipDirectory findDirectory(Reader& r) {
    // End of central directory: 22 bytes, within the last 64 KB + 22 (its comment).
    const uint64_t tail = std::min<uint64_t>(r.size(), 65557);
    if (tail < 22)
        r.fail("is missing (file too small)");
    const std::string end = r.read(r.size() - tail, tail);
    const auto* e = reinterpret_cast<const unsigned char*>(end.data());
    int64_t eocd = -1;
    for (int64_t i = int64_t(tail) - 22; i >= 0; --i)
        if (u32(e + i) == 0x06054b50) {
            eocd = i;
            break;
        }
    if (eocd < 0)
        r.fail("is missing");
    ZipDirectory dir{u16(e + eocd + 10), u32(e + eocd + 12), u32(e + eocd + 16)};
    if (dir.entries == 0xFFFF || dir.size == 0xFFFFFFFF || dir.offset == 0xFFFFFFFF) {
        // Zip64: the locator sits right before the end record.
        const uint64_t locator = r.size() - tail + uint64_t(eocd);
        if (locator < 20)
            r.fail("has no zip64 locator");
        const std::string loc = r.read(locator - 20, 20);
        const auto* l = reinterpret_cast<const unsigned char*>(loc.data());
        if (u32(l) != 0x07064b50)
            r.fail("has no zip64 locator");
        const std::string z = r.read(u64(l + 8), 56);
        const auto* z64 = reinterpret_cast<const unsigned char*>(z.data());
        if (u32(z64) != 0x06064b50)
            r.fail("has a broken zip64 end record");
        dir = ZipDirectory{u64(z64 + 32), u64(z64 + 40), u64(z64 + 48)};
    }
    if (dir.size > kMaxDirectoryBytes || dir.entries > dir.size / 46 + 1)
        r.fail("is implausibly large");
    return dir;
}

// One entry of the central directory.
struct ZipEntry {
    std::string name; // as stored, with the archive's top folder
    uint16_t method = 0;
    uint64_t packed = 0;
    uint64_t size = 0;
    uint64_t local = 0; // offset of its local header
};

// The entry at `pos` of the central directory `dir`; moves `pos` past it.
ZipEntry readEntry(const Reader& r, const std::string& dir, uint64_t& pos) {
    const auto* d = reinterpret_cast<const unsigned char*>(dir.data());
    const uint64_t dirSize = dir.size();
    if (dirSize - pos < 46 || u32(d + pos) != 0x02014b50)
        r.fail("has a broken entry");
    ZipEntry entry;
    entry.method = u16(d + pos + 10);
    entry.packed = u32(d + pos + 20);
    entry.size = u32(d + pos + 24);
    const uint64_t nameLen = u16(d + pos + 28), extraLen = u16(d + pos + 30),
                   commentLen = u16(d + pos + 32);
    entry.local = u32(d + pos + 42);
    if (dirSize - pos - 46 < nameLen + extraLen + commentLen)
        r.fail("has a broken entry");
    entry.name.assign(dir.data() + pos + 46, nameLen);
    // Zip64 sizes and offset, in this order, for the fields that are 0xFFFFFFFF.
    for (uint64_t x = pos + 46 + nameLen; x + 4 <= pos + 46 + nameLen + extraLen;) {
        const uint16_t id = u16(d + x), len = u16(d + x + 2);
        if (x + 4 + len > pos + 46 + nameLen + extraLen)
            r.fail("has a broken extra field");
        if (id == 0x0001) {
            uint64_t f = x + 4;
            for (uint64_t* v : {&entry.size, &entry.packed, &entry.local})
                if (*v == 0xFFFFFFFF) {
                    if (f + 8 > x + 4 + len)
                        r.fail("has a broken zip64 field");
                    *v = u64(d + f);
                    f += 8;
                }
        }
        x += 4 + len;
    }
    pos += 46 + nameLen + extraLen + commentLen;
    return entry;
}

// The entry's bytes, inflated when stored deflated.
std::string readEntryData(Reader& r, const ZipEntry& entry) {
    const std::string header = r.read(entry.local, 30);
    const auto* h = reinterpret_cast<const unsigned char*>(header.data());
    if (u32(h) != 0x04034b50)
        r.fail("has a broken local header");
    std::string data = r.read(entry.local + 30 + u16(h + 26) + u16(h + 28), entry.packed);
    if (entry.method == 8) {
        std::string inflated;
        if (!inflateTo(data, entry.size, &inflated))
            r.fail("holds a damaged code entry (" + entry.name + ")");
        data = std::move(inflated);
    }
    return data;
}

} // namespace

std::string codeDigestOfEntries(const std::vector<std::pair<std::string, std::string>>& entries) {
    std::set<std::string> parts;
    for (const auto& [name, data] : entries) {
        if (name == "constants.pkl")
            parts.insert("constants.pkl " + hexSha256(data));
        else if (name.rfind("code/", 0) == 0 &&
                 !(name.size() >= 10 && name.compare(name.size() - 10, 10, ".debug_pkl") == 0))
            addBlocks(data, parts);
    }
    std::string joined;
    for (const std::string& p : parts) {
        if (!joined.empty())
            joined += '\n';
        joined += p;
    }
    return hexSha256(joined);
}

std::string torchScriptCodeDigest(const std::string& path) {
    Reader r(path);
    const ZipDirectory where = findDirectory(r);
    const std::string dir = r.read(where.offset, where.size);
    std::vector<std::pair<std::string, std::string>> code;
    uint64_t codeBytes = 0;
    uint64_t pos = 0;
    for (uint64_t n = 0; n < where.entries; ++n) {
        const ZipEntry entry = readEntry(r, dir, pos);
        const size_t slash = entry.name.find('/');
        const std::string name =
            slash == std::string::npos ? entry.name : entry.name.substr(slash + 1);
        const bool isCode = name == "constants.pkl" || name.rfind("code/", 0) == 0;
        if (!isCode || (name.size() >= 10 && name.compare(name.size() - 10, 10, ".debug_pkl") == 0))
            continue;
        // torch.jit.save stores code deflated or as is; anything else, or code larger than
        // any model's (a deflate bomb), is not its output.
        if ((entry.method != 0 && entry.method != 8) ||
            (entry.method == 0 && entry.packed != entry.size) ||
            entry.packed > kMaxCodeEntryBytes || entry.size > kMaxCodeEntryBytes ||
            (codeBytes += entry.size) > kMaxCodeBytes)
            r.fail("holds code entries the exporter does not write (" + entry.name + ")");
        code.emplace_back(name, readEntryData(r, entry));
    }
    if (code.empty())
        r.fail("holds no TorchScript code");
    return codeDigestOfEntries(code);
}

namespace {

std::vector<std::string> familiesIn(const char* list, const std::string& role,
                                    const std::string& digest) {
    std::vector<std::string> families;
    std::istringstream in(list);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#')
            continue;
        std::istringstream fields(line);
        std::string r, dg, family;
        if (fields >> r >> dg >> family && r == role && dg == digest)
            families.push_back(family);
    }
    return families;
}

} // namespace

std::vector<std::string> codeFamilies(const std::string& role, const std::string& digest) {
    return familiesIn(kCodeAllowlist, role, digest);
}

bool currentExporterCode(const std::string& role, const std::string& digest) {
    return !familiesIn(kCurrentCodeAllowlist, role, digest).empty();
}

} // namespace florence::detail

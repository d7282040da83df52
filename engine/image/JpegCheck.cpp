#include "image/JpegCheck.h"

#include <csetjmp>
#include <cstdio>
#include <jpeglib.h>

namespace florence::detail {

namespace {

struct ErrorManager {
    jpeg_error_mgr pub;
    jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void onError(j_common_ptr cinfo) {
    auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
    (*cinfo->err->format_message)(cinfo, err->message);
    std::longjmp(err->jump, 1);
}

// Level -1 is a warning (corrupt data, premature end): an error here. Trace levels are ignored.
void onMessage(j_common_ptr cinfo, int level) {
    if (level < 0)
        onError(cinfo);
}

void silent(j_common_ptr) {}

// Huffman-coded frames, baseline or progressive, need at least one bit per 8x8 luma block (a DC
// code; progressive scans may share one end-of-band code between blocks, but not the DC scan).
// A file too small for its declared size cannot hold the image: refused before libjpeg
// allocates for it (a progressive frame keeps every coefficient until its last scan).
// Arithmetic coding has no such floor: a flat 10000x10000 picture takes 211 bytes in it. Those
// are bounded by the pixel limit only, and a cut one still ends in libjpeg's warning.
bool tooSmallForItsSize(const jpeg_decompress_struct& c, size_t bytes) {
    if (c.arith_code)
        return false;
    const double blocks = double((c.image_width + 7) / 8) * double((c.image_height + 7) / 8);
    return double(bytes) * 8 < blocks;
}

// Runs libjpeg over the whole file; POD locals only between setjmp and longjmp.
bool decodeAll(jpeg_decompress_struct* c, const std::vector<uint8_t>& d, JSAMPROW row,
               unsigned rowBytes, bool* tooSmall) {
    auto* err = reinterpret_cast<ErrorManager*>(c->err);
    if (setjmp(err->jump))
        return false;
    jpeg_create_decompress(c);
    jpeg_mem_src(c, d.data(), static_cast<unsigned long>(d.size()));
    jpeg_read_header(c, TRUE);
    if (tooSmallForItsSize(*c, d.size())) {
        *tooSmall = true;
        return false;
    }
    c->scale_num = 1;
    c->scale_denom = 8;
    c->dct_method = JDCT_IFAST;
    c->do_fancy_upsampling = FALSE;
    jpeg_calc_output_dimensions(c);
    if (c->output_width * static_cast<unsigned>(c->output_components) > rowBytes)
        return false;
    jpeg_start_decompress(c);
    while (c->output_scanline < c->output_height)
        jpeg_read_scanlines(c, &row, 1);
    jpeg_finish_decompress(c);
    return true;
}

} // namespace

std::string jpegProblem(const std::vector<uint8_t>& d) {
    jpeg_decompress_struct c{};
    ErrorManager err{};
    c.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = onError;
    err.pub.emit_message = onMessage;
    err.pub.output_message = silent;
    // One output row at 1/8 scale: 65535 / 8 columns of at most 4 components.
    std::vector<JSAMPLE> row(8192 * 4 + 64);
    bool tooSmall = false;
    const bool ok = decodeAll(&c, d, row.data(), static_cast<unsigned>(row.size()), &tooSmall);
    const unsigned width = c.image_width, height = c.image_height;
    jpeg_destroy_decompress(&c);
    if (ok)
        return {};
    if (tooSmall)
        return "the JPEG is damaged: " + std::to_string(d.size()) + " bytes cannot hold the " +
               std::to_string(width) + "×" + std::to_string(height) + " pixels it declares";
    return std::string("the JPEG is damaged (") + (err.message[0] ? err.message : "unreadable") +
           ")";
}

} // namespace florence::detail

#include <florence/annotate.h>

#include <florence/files.h>

#include <QDir>
#include <QFileInfo>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <regex>

namespace florence {

namespace {

// Colors that stay distinguishable from each other and visible on both light and dark photos
// (Trubetskoy's "20 distinct colors" without white, black, gray, navy, maroon, beige and mint).
// RGB order, because the image is drawn on in RGB.
const cv::Scalar kPalette[] = {
    {230, 25, 75},  {60, 180, 75},  {255, 225, 25},  {0, 130, 200},   {245, 130, 48},
    {145, 30, 180}, {70, 240, 240}, {240, 50, 230},  {210, 245, 60},  {0, 128, 128},
    {170, 110, 40}, {128, 128, 0},  {250, 190, 212}, {220, 190, 255},
};
constexpr int kPaletteSize = int(sizeof(kPalette) / sizeof(kPalette[0]));

constexpr double kFillAlpha = 0.35;
// How much the caption banner darkens what is under it: enough for white text to read on a white
// photo, little enough that the photo still shows through.
constexpr double kBannerDarkening = 0.65;
const int kFont = cv::FONT_HERSHEY_SIMPLEX;

// Sizes that scale with the image so that labels are as legible on a 300 px thumbnail as on a
// 12 MP phone photo. The geometric mean keeps a long panorama from getting giant text.
struct Style {
    int line = 1;
    double fontScale = 0.4;
    int fontThickness = 1;
    int pad = 2;
};

Style styleFor(int width, int height) {
    const double size = std::sqrt(double(width) * double(height));
    Style s;
    s.line = std::max(1, int(std::lround(size / 400.0)));
    // Below 0.4 Hershey glyphs become unreadable smudges, so small images get relatively
    // larger text.
    s.fontScale = std::max(0.4, size / 1250.0);
    s.fontThickness = std::max(1, int(std::lround(s.fontScale * 1.2)));
    s.pad = std::max(2, int(std::lround(s.fontScale * 4.0)));
    return s;
}

cv::Scalar contrastingTextColor(const cv::Scalar& background) {
    const double luma = 0.299 * background[0] + 0.587 * background[1] + 0.114 * background[2];
    return luma > 140 ? cv::Scalar(0, 0, 0) : cv::Scalar(255, 255, 255);
}

// Hershey fonts have glyphs for printable ASCII only, and putText would draw every byte of a
// UTF-8 sequence as its own garbage glyph; one '?' per character keeps the text's shape.
std::string toDrawableAscii(const std::string& utf8) {
    std::string out;
    out.reserve(utf8.size());
    size_t i = 0;
    while (i < utf8.size()) {
        const auto c = static_cast<unsigned char>(utf8[i]);
        if (c < 0x80) {
            out += (c < 0x20 || c == 0x7f) ? ' ' : char(c);
            ++i;
            continue;
        }
        size_t length = 1;
        if ((c & 0xe0) == 0xc0)
            length = 2;
        else if ((c & 0xf0) == 0xe0)
            length = 3;
        else if ((c & 0xf8) == 0xf0)
            length = 4;
        // A stray continuation byte or a cut-off sequence counts as one character.
        size_t consumed = 1;
        while (consumed < length && i + consumed < utf8.size() &&
               (static_cast<unsigned char>(utf8[i + consumed]) & 0xc0) == 0x80)
            ++consumed;
        out += '?';
        i += consumed;
    }
    return out;
}

std::string collapseWhitespace(const std::string& text) {
    std::string out;
    bool pendingSpace = false;
    for (char c : text) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            pendingSpace = !out.empty();
            continue;
        }
        if (pendingSpace)
            out += ' ';
        pendingSpace = false;
        out += c;
    }
    return out;
}

int textWidth(const std::string& text, const Style& s) {
    int baseline = 0;
    return cv::getTextSize(text, kFont, s.fontScale, s.fontThickness, &baseline).width;
}

// Shortens text with "..." until it fits; a label wider than the whole image would otherwise be
// cut off at the border without any sign that it goes on.
std::string fitWidth(const std::string& text, int maxWidth, const Style& s) {
    if (textWidth(text, s) <= maxWidth)
        return text;
    std::string shortened = text;
    while (!shortened.empty()) {
        shortened.pop_back();
        if (textWidth(shortened + "...", s) <= maxWidth)
            return shortened + "...";
    }
    return "...";
}

bool finite(double x, double y) {
    return std::isfinite(x) && std::isfinite(y);
}

// Sutherland–Hodgman against the image rectangle. Clipping ourselves (rather than letting
// OpenCV clip) keeps coordinates of runaway points small enough for its fixed-point rasterizer.
std::vector<cv::Point2d> clipToImage(std::vector<cv::Point2d> polygon, int width, int height) {
    const double maxX = width - 1, maxY = height - 1;
    auto clipEdge = [&polygon](auto inside, auto intersect) {
        std::vector<cv::Point2d> out;
        const size_t n = polygon.size();
        for (size_t i = 0; i < n; ++i) {
            const cv::Point2d& cur = polygon[i];
            const cv::Point2d& prev = polygon[(i + n - 1) % n];
            const bool curIn = inside(cur), prevIn = inside(prev);
            if (curIn != prevIn)
                out.push_back(intersect(prev, cur));
            if (curIn)
                out.push_back(cur);
        }
        polygon = std::move(out);
    };
    auto atX = [](double x) {
        return [x](const cv::Point2d& a, const cv::Point2d& b) {
            return cv::Point2d(x, a.y + (b.y - a.y) * (x - a.x) / (b.x - a.x));
        };
    };
    auto atY = [](double y) {
        return [y](const cv::Point2d& a, const cv::Point2d& b) {
            return cv::Point2d(a.x + (b.x - a.x) * (y - a.y) / (b.y - a.y), y);
        };
    };
    if (polygon.size() == 1) { // a single point has no edges to clip
        const cv::Point2d& p = polygon[0];
        if (p.x < 0 || p.y < 0 || p.x > maxX || p.y > maxY)
            polygon.clear();
        return polygon;
    }
    clipEdge([](const cv::Point2d& p) { return p.x >= 0; }, atX(0));
    clipEdge([maxX](const cv::Point2d& p) { return p.x <= maxX; }, atX(maxX));
    clipEdge([](const cv::Point2d& p) { return p.y >= 0; }, atY(0));
    clipEdge([maxY](const cv::Point2d& p) { return p.y <= maxY; }, atY(maxY));
    return polygon;
}

std::vector<cv::Point> toPixels(const std::vector<cv::Point2d>& points) {
    std::vector<cv::Point> out;
    out.reserve(points.size());
    for (const cv::Point2d& p : points) {
        const cv::Point q(int(std::lround(p.x)), int(std::lround(p.y)));
        // Clipping can produce runs of identical pixels; they add nothing but work.
        if (out.empty() || out.back() != q)
            out.push_back(q);
    }
    if (out.size() > 1 && out.front() == out.back())
        out.pop_back();
    return out;
}

// Flat x,y list → clipped pixel polygon; an unpaired last value and non-finite points are
// dropped so garbage coordinates cannot reach the rasterizer.
std::vector<cv::Point> clippedPolygon(const std::vector<double>& flat, int width, int height) {
    std::vector<cv::Point2d> points;
    for (size_t i = 0; i + 1 < flat.size(); i += 2)
        if (finite(flat[i], flat[i + 1]))
            points.emplace_back(flat[i], flat[i + 1]);
    if (points.empty())
        return {};
    return toPixels(clipToImage(std::move(points), width, height));
}

// What is drawn for one item, prepared once so fills, outlines and labels can be drawn in
// separate passes: labels last, so no later outline crosses an earlier label.
struct Shape {
    cv::Scalar color;
    std::string label; // drawable ASCII, may be empty
    bool isBox = false;
    cv::Rect box;                              // isBox
    std::vector<std::vector<cv::Point>> parts; // otherwise: clipped polygons (or lines, points)
    bool filled = false;
    cv::Point labelAnchor; // top-left corner the label tag hangs from
};

std::optional<Shape> prepareBox(const AnswerItem& item, int width, int height) {
    const Box& b = item.box;
    if (!finite(b.x1, b.y1) || !finite(b.x2, b.y2))
        return std::nullopt;
    const double x1 = std::min(b.x1, b.x2), x2 = std::max(b.x1, b.x2);
    const double y1 = std::min(b.y1, b.y2), y2 = std::max(b.y1, b.y2);
    // Entirely outside: clamping would draw a misleading line along the border.
    if (x2 < 0 || y2 < 0 || x1 > width || y1 > height)
        return std::nullopt;
    auto clampX = [width](double x) { return int(std::lround(std::clamp(x, 0.0, width - 1.0))); };
    auto clampY = [height](double y) { return int(std::lround(std::clamp(y, 0.0, height - 1.0))); };
    Shape shape;
    shape.isBox = true;
    const cv::Point topLeft(clampX(x1), clampY(y1));
    const cv::Point bottomRight(clampX(x2), clampY(y2));
    // cv::Rect is half-open; a zero-size box still gets its one pixel (drawn with thickness).
    shape.box = cv::Rect(topLeft, bottomRight + cv::Point(1, 1));
    shape.labelAnchor = topLeft;
    return shape;
}

std::optional<Shape> preparePolygons(const std::vector<std::vector<double>>& polygons, bool fill,
                                     int width, int height) {
    Shape shape;
    shape.filled = fill;
    for (const auto& flat : polygons) {
        std::vector<cv::Point> part = clippedPolygon(flat, width, height);
        if (!part.empty())
            shape.parts.push_back(std::move(part));
    }
    if (shape.parts.empty())
        return std::nullopt;
    if (fill) {
        shape.labelAnchor = shape.parts.front().front();
    } else {
        // OCR text reads like a box label: above the region's top-left.
        cv::Rect bounds = cv::boundingRect(shape.parts.front());
        for (const auto& part : shape.parts)
            bounds |= cv::boundingRect(part);
        shape.labelAnchor = bounds.tl();
    }
    return shape;
}

std::optional<Shape> prepare(const AnswerItem& item, int width, int height) {
    switch (item.kind) {
    case AnswerItem::Kind::Box:
        return prepareBox(item, width, height);
    case AnswerItem::Kind::Quad:
        return preparePolygons({item.quad}, false, width, height);
    case AnswerItem::Kind::Polygon:
        return preparePolygons(item.polygons, true, width, height);
    }
    return std::nullopt;
}

void fillBlended(cv::Mat& image, const Shape& shape) {
    cv::Rect bounds;
    for (const auto& part : shape.parts)
        bounds |= cv::boundingRect(part);
    bounds &= cv::Rect(0, 0, image.cols, image.rows);
    if (bounds.empty())
        return;
    cv::Mat roi = image(bounds);
    cv::Mat mask = cv::Mat::zeros(bounds.size(), CV_8U);
    // One fillPoly per part: several contours in one call fill by parity, which would punch
    // holes where two parts of one object overlap.
    for (const auto& part : shape.parts)
        if (part.size() >= 3)
            cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{part}, cv::Scalar(255),
                         cv::LINE_8, 0, -bounds.tl());
    cv::Mat blended;
    cv::addWeighted(roi, 1.0 - kFillAlpha, cv::Mat(roi.size(), roi.type(), shape.color), kFillAlpha,
                    0.0, blended);
    blended.copyTo(roi, mask);
}

void drawOutline(cv::Mat& image, const Shape& shape, const Style& s) {
    if (shape.isBox) {
        // Axis-aligned edges gain nothing from antialiasing and stay crisp without it.
        cv::rectangle(image, shape.box, shape.color, s.line, cv::LINE_8);
        return;
    }
    for (const auto& part : shape.parts) {
        if (part.size() == 1)
            cv::circle(image, part[0], std::max(1, s.line), shape.color, cv::FILLED, cv::LINE_AA);
        else
            cv::polylines(image, part, part.size() >= 3, shape.color, s.line, cv::LINE_AA);
    }
}

// A filled tag in the item's color with black or white text, whichever contrasts: readable on
// any photo because the text never sits on the photo itself. Hangs above the anchor, or below
// it when there is no room above (a box touching the top edge).
void drawTag(cv::Mat& image, const std::string& text, cv::Point anchor, const cv::Scalar& color,
             const Style& s) {
    if (text.empty())
        return;
    const std::string shown = fitWidth(text, image.cols - 2 * s.pad, s);
    int baseline = 0;
    const cv::Size size = cv::getTextSize(shown, kFont, s.fontScale, s.fontThickness, &baseline);
    const int tagWidth = size.width + 2 * s.pad;
    const int tagHeight = size.height + baseline + 2 * s.pad;
    const int x = std::clamp(anchor.x, 0, std::max(0, image.cols - tagWidth));
    int y = anchor.y - tagHeight;
    if (y < 0)
        y = std::min(anchor.y, std::max(0, image.rows - tagHeight));
    cv::rectangle(image, cv::Rect(x, y, tagWidth, tagHeight), color, cv::FILLED);
    cv::putText(image, shown, cv::Point(x + s.pad, y + s.pad + size.height), kFont, s.fontScale,
                contrastingTextColor(color), s.fontThickness, cv::LINE_AA);
}

// Greedy word wrap; a word longer than a line is broken wherever it has to be.
std::vector<std::string> wrapText(const std::string& text, int maxWidth, const Style& s) {
    std::vector<std::string> lines;
    std::string line;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find(' ', pos);
        if (end == std::string::npos)
            end = text.size();
        std::string word = text.substr(pos, end - pos);
        pos = end + 1;
        const std::string candidate = line.empty() ? word : line + ' ' + word;
        if (textWidth(candidate, s) <= maxWidth) {
            line = candidate;
            continue;
        }
        if (!line.empty())
            lines.push_back(line);
        line.clear();
        while (textWidth(word, s) > maxWidth && word.size() > 1) {
            size_t take = word.size() - 1;
            while (take > 1 && textWidth(word.substr(0, take), s) > maxWidth)
                --take;
            lines.push_back(word.substr(0, take));
            word.erase(0, take);
        }
        line = word;
    }
    if (!line.empty())
        lines.push_back(line);
    return lines;
}

// Region tasks answer with text such as "car<loc_52><loc_333>…"; the location tokens mean
// nothing to someone looking at the picture.
std::string bannerText(const std::string& answerText) {
    static const std::regex locToken("<loc_[0-9]+>");
    return collapseWhitespace(toDrawableAscii(std::regex_replace(answerText, locToken, " ")));
}

void drawBanner(cv::Mat& image, const std::string& text, const Style& s) {
    if (text.empty())
        return;
    int baseline = 0;
    const cv::Size glyph = cv::getTextSize("Ag", kFont, s.fontScale, s.fontThickness, &baseline);
    const int lineHeight = glyph.height + baseline + s.pad;
    std::vector<std::string> lines = wrapText(text, image.cols - 2 * s.pad, s);
    const int maxLines = std::max(1, (image.rows - s.pad) / lineHeight);
    if (int(lines.size()) > maxLines) {
        lines.resize(size_t(maxLines));
        // fitWidth keeps the "..." when it has to shorten the line to make room for it.
        lines.back() = fitWidth(lines.back() + "...", image.cols - 2 * s.pad, s);
    }
    const int bannerHeight = std::min(image.rows, int(lines.size()) * lineHeight + s.pad);
    cv::Mat roi = image(cv::Rect(0, 0, image.cols, bannerHeight));
    roi.convertTo(roi, -1, 1.0 - kBannerDarkening);
    for (size_t i = 0; i < lines.size(); ++i) {
        const int y = s.pad + int(i) * lineHeight + glyph.height;
        cv::putText(image, lines[i], cv::Point(s.pad, y), kFont, s.fontScale,
                    cv::Scalar(255, 255, 255), s.fontThickness, cv::LINE_AA);
    }
}

void checkBuffer(const RgbImage& image, const std::string& what) {
    if (image.pixels.size() != size_t(image.width) * size_t(image.height) * 3)
        throw ImageError(what + ": the image buffer holds " + std::to_string(image.pixels.size()) +
                         " bytes, not " + std::to_string(image.width) + "×" +
                         std::to_string(image.height) + "×3");
}

} // namespace

RgbImage drawAnswer(const RgbImage& image, const ParsedAnswer& answer) {
    RgbImage out = image;
    if (image.empty())
        return out;
    checkBuffer(image, "annotated image");
    cv::Mat canvas(out.height, out.width, CV_8UC3, out.pixels.data());
    const Style style = styleFor(out.width, out.height);

    // Colors by order of first appearance: the first labels of any answer get the most
    // distinct colors, and every box of one label gets the same one.
    std::map<std::string, int> colorIndex;
    std::vector<Shape> shapes;
    for (const AnswerItem& item : answer.items) {
        const auto [it, inserted] = colorIndex.emplace(item.label, int(colorIndex.size()));
        std::optional<Shape> shape = prepare(item, out.width, out.height);
        if (!shape)
            continue;
        shape->color = kPalette[it->second % kPaletteSize];
        shape->label = collapseWhitespace(toDrawableAscii(item.label));
        shapes.push_back(std::move(*shape));
    }

    for (const Shape& shape : shapes)
        if (shape.filled)
            fillBlended(canvas, shape);
    for (const Shape& shape : shapes)
        drawOutline(canvas, shape, style);
    for (const Shape& shape : shapes) {
        // A box's tag sits on its outer edge rather than half a line inside it.
        const cv::Point offset = shape.isBox ? cv::Point(-style.line / 2, 0) : cv::Point();
        drawTag(canvas, shape.label, shape.labelAnchor + offset, shape.color, style);
    }

    if (answer.items.empty() && answer.type == AnswerType::PureText)
        drawBanner(canvas, bannerText(answer.text), style);
    return out;
}

void checkImageDestination(const std::string& path) {
    const QFileInfo info(QString::fromStdString(path));
    const std::string extension = info.suffix().toLower().toStdString();
    if (extension.empty())
        throw ImageError(path + ": the file name has no extension; use .png or .jpg");
    if (!cv::haveImageWriter("image." + extension))
        throw ImageError(path + ": cannot write ." + extension +
                         " images; use .png, .jpg, .bmp, .tif or .webp");
    if (const std::string why = whyNotAFileDestination(path); !why.empty())
        throw ImageError(why);
}

void saveImage(const RgbImage& image, const std::string& path) {
    if (image.empty())
        throw ImageError(path + ": there is no image to save");
    checkBuffer(image, path);
    checkImageDestination(path);
    const std::string extension =
        QFileInfo(QString::fromStdString(path)).suffix().toLower().toStdString();

    const cv::Mat rgb(image.height, image.width, CV_8UC3,
                      const_cast<uint8_t*>(image.pixels.data()));
    cv::Mat bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    std::vector<uchar> encoded;
    try {
        if (!cv::imencode("." + extension, bgr, encoded))
            throw ImageError(path + ": the image could not be encoded as ." + extension);
    } catch (const cv::Exception& e) {
        throw ImageError(path + ": the image could not be encoded as ." + extension + " (" + e.err +
                         ")");
    }
    // Encode in memory and write through a temporary file rather than by cv::imwrite: Qt opens
    // UTF-8 paths on every platform (as loadImage does), and a failed write (a full disk) leaves
    // an existing file intact instead of half-overwritten.
    try {
        writeFileAtomically(path, QByteArray(reinterpret_cast<const char*>(encoded.data()),
                                             qsizetype(encoded.size())));
    } catch (const Error& e) {
        throw ImageError(e.what());
    }
}

void saveAnnotatedImage(const RgbImage& image, const ParsedAnswer& answer,
                        const std::string& path) {
    saveImage(drawAnswer(image, answer), path);
}

} // namespace florence

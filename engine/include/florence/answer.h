// Turns the text Florence-2 generates into structured answers, as the original
// Florence2Processor.post_process_generation does, plus the app's own JSON and COCO forms
// (engine/text/AnswerJson.cpp; the document holding all of them: <florence/answer_json.h>).
//
//   // text decoded with special tokens kept
//   florence::ParsedAnswer a = florence::parseAnswer(
//       "<OD>", "</s><s>car<loc_52><loc_333><loc_932><loc_774></s>", 1000, 667);
//   a.items[0].label;                           // "car"
//   a.items[0].box;                             // {52.5, 222.4445, 932.5, 516.5915} pixels
//   QJsonObject hf = florence::toHuggingFaceJson(a); // {"<OD>": {"bboxes": [[…]], "labels":
//   ["car"]}}
//
// The parser never throws on the generated text: empty, cut-off or malformed text gives what can
// be recovered, so it can be called again on the growing text while tokens stream in (a box
// appears once its fourth location token has arrived).
#pragma once

#include <florence/tasks.h>

#include <QJsonObject>

#include <optional>
#include <string>
#include <vector>

namespace florence {

struct AnswerItem {
    enum class Kind {
        Box,     // x1, y1, x2, y2 (description_with_bboxes, bboxes, phrase_grounding)
        Quad,    // OCR region: four corners, 8 coordinates
        Polygon, // one object: one or more polygons (polygons, open vocabulary with masks)
    };
    Kind kind = Kind::Box;
    std::string label;        // as the original returns it ("" where the task has no labels)
    Box box;                  // Kind::Box: pixels of the original image
    std::vector<double> quad; // Kind::Quad: x1,y1,…,x4,y4 in pixels
    std::vector<std::vector<double>> polygons; // Kind::Polygon: flat x,y lists in pixels
    // The location bins as generated, one list per geometry (box: 4, quad: 8, polygon: its
    // coordinates after dropping an unpaired last one); toHuggingFaceJson recomputes the
    // original's float32 coordinates from them.
    std::vector<std::vector<int>> bins;
    // Bytes [charBegin, charEnd) of the generated text that produced the item: its label through
    // its last location token. For the second and later boxes of one label the range therefore
    // also covers the earlier boxes.
    int charBegin = -1, charEnd = -1;
    // The same range in generated tokens [tokenBegin, tokenEnd); -1 unless parsed from tokens
    // (engine/text/AnswerTokens.h).
    int tokenBegin = -1, tokenEnd = -1;
    // Byte ranges of the generated text that are this item's own: its label, then its geometry
    // (for the second box of a label: the label and the second box, not the first).
    std::vector<std::pair<int, int>> ownChars;
    // Confidence in (0, 1]: the mean probability of the tokens of ownChars (label and location
    // tokens together; an OCR line's text and quad). -1 unless parsed with log-probabilities.
    double score = -1;
};

struct ParsedAnswer {
    std::string task; // task token as requested
    AnswerType type = AnswerType::PureText;
    // PureText: the answer (generated text without <s> and </s>, not trimmed, as the original).
    // Other types: the generated text without <s>, </s> and <pad>, for display.
    std::string text;
    std::vector<AnswerItem> items; // in generation order; empty for PureText
    int imageWidth = 0, imageHeight = 0;
    // The mean probability of the answer's words, every generated token but <s>, </s>, <pad>
    // and <loc_N> (of all of them when there is no other): a caption's (or any answer's)
    // confidence in (0, 1]. -1 unless parsed with log-probabilities.
    double score = -1;
};

// "pure_text", "description_with_bboxes", … : the original's names for the answer types.
std::string answerTypeName(AnswerType type);
// The answer type of one of those names; nullopt for any other text.
std::optional<AnswerType> answerTypeNamed(const std::string& name);

// What a person reads: `text` without anything in angle brackets that is a model token (<s>,
// </s>, <pad>, <loc_N>, task tokens), whitespace runs squeezed and trimmed. The app's table and
// copied text, and batch's text sidecars, show this.
std::string readableText(const std::string& text);

// `answer` as a person reads it: readableText() for its text and every label. For a region
// task, `askedRegion` is the box asked about: an answer without geometry becomes one box item
// there, labelled with the answer. The app's table and the answer document's "native" form use
// this; the Hugging Face form keeps the parser's answer as the original returns it.
ParsedAnswer readableAnswer(const ParsedAnswer& answer, const std::optional<Box>& askedRegion);

// The box, in pixels of an image of that size, that a region task's prompt asks about (its
// four <loc_N> tokens), or nothing when the prompt has none.
std::optional<Box> regionInPrompt(const std::string& prompt, int imageWidth, int imageHeight);
// The box `answer`'s task asked about, from the prompt the model was given: regionInPrompt for a
// region task, nothing for any other (a package's own tasks included). What readableAnswer takes.
std::optional<Box> askedRegion(const ParsedAnswer& answer, const std::string& prompt);

// Parses generatedText (decoded with special tokens kept, "</s><s>car<loc_52>…</s>") for task
// on an image of imageWidth x imageHeight pixels. An unknown task is parsed as pure text, as the
// original does.
ParsedAnswer parseAnswer(const std::string& task, const std::string& generatedText, int imageWidth,
                         int imageHeight);

// Exactly the structure the original returns: {"<OD>": {"bboxes": [[x1,y1,x2,y2]…],
// "labels": […]}}, {"<CAPTION>": "text"}, with its float32 coordinate values.
QJsonObject toHuggingFaceJson(const ParsedAnswer& answer);
// The app's form: {"task", "answer_type", "text", "image_width", "image_height", "items":
// [{"kind": "box"|"quad"|"polygon", "label", "box"|"quad"|"polygons" (pixels), "bins",
// "char_begin", "char_end", "token_begin", "token_end"}]}, and "score" (answer and items) where
// scored (florence::parseResult).
QJsonObject toNativeJson(const ParsedAnswer& answer);
// COCO detection file for one image (id 1): images, annotations (bbox as x,y,w,h; quads and
// polygons also as segmentation) and one category per distinct label in order of appearance
// (an empty label becomes "region"). Pure text answers give no annotations. Coordinates and
// areas are rounded to 0.01 px: the location bins do not know them any better.
QJsonObject toCocoJson(const ParsedAnswer& answer, const std::string& imageFileName, int imageWidth,
                       int imageHeight);

} // namespace florence

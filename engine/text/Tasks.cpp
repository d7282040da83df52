#include <florence/tasks.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace florence {

namespace {

// Prompts are copied from the original Florence2Processor (task_prompts_without_inputs and
// task_prompts_with_input); the answer types from its tasks_answer_post_processing_type.
const std::vector<TaskInfo> kTasks = {
    {"<CAPTION>", "Caption", "What does the image describe?", TaskInput::None, "",
     AnswerType::PureText},
    {"<DETAILED_CAPTION>", "Detailed caption", "Describe in detail what is shown in the image.",
     TaskInput::None, "", AnswerType::PureText},
    {"<MORE_DETAILED_CAPTION>", "More detailed caption",
     "Describe with a paragraph what is shown in the image.", TaskInput::None, "",
     AnswerType::PureText},
    {"<OD>", "Object detection", "Locate the objects with category name in the image.",
     TaskInput::None, "", AnswerType::DescriptionWithBboxes},
    {"<DENSE_REGION_CAPTION>", "Dense region caption",
     "Locate the objects in the image, with their descriptions.", TaskInput::None, "",
     AnswerType::DescriptionWithBboxes},
    {"<REGION_PROPOSAL>", "Region proposal", "Locate the region proposals in the image.",
     TaskInput::None, "", AnswerType::Bboxes},
    {"<OCR>", "OCR", "What is the text in the image?", TaskInput::None, "", AnswerType::PureText},
    {"<OCR_WITH_REGION>", "OCR with regions", "What is the text in the image, with regions?",
     TaskInput::None, "", AnswerType::Ocr},
    {"<CAPTION_TO_PHRASE_GROUNDING>", "Caption to phrase grounding",
     "Locate the phrases in the caption: {input}", TaskInput::Text, "caption",
     AnswerType::PhraseGrounding},
    {"<REFERRING_EXPRESSION_SEGMENTATION>", "Referring expression segmentation",
     "Locate {input} in the image with mask", TaskInput::Text, "phrase", AnswerType::Polygons},
    {"<REGION_TO_SEGMENTATION>", "Region to segmentation",
     "What is the polygon mask of region {input}", TaskInput::Region, "region",
     AnswerType::Polygons},
    {"<OPEN_VOCABULARY_DETECTION>", "Open vocabulary detection", "Locate {input} in the image.",
     TaskInput::Text, "phrase", AnswerType::DescriptionWithBboxesOrPolygons},
    {"<REGION_TO_CATEGORY>", "Region to category", "What is the region {input}?", TaskInput::Region,
     "region", AnswerType::PureText},
    {"<REGION_TO_DESCRIPTION>", "Region to description", "What does the region {input} describe?",
     TaskInput::Region, "region", AnswerType::PureText},
    {"<REGION_TO_OCR>", "Region to OCR", "What text is in the region {input}?", TaskInput::Region,
     "region", AnswerType::PureText},
};

const TaskInfo& customPrompt() {
    static const TaskInfo task{kCustomPromptTask, "Custom prompt", "{input}",
                               TaskInput::Text,   "prompt",        AnswerType::PureText};
    return task;
}

// A package's own tasks, added by addPackageTasks; never removed, so references stay valid.
std::mutex g_addedMutex;
std::deque<TaskInfo> g_added;

bool sameTask(const TaskInfo& a, const TaskInfo& b) {
    return a.token == b.token && a.name == b.name && a.promptFormat == b.promptFormat &&
           a.input == b.input && a.inputLabel == b.inputLabel && a.answerType == b.answerType;
}

bool isBlank(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c) != 0; });
}

std::string trimmed(const std::string& s) {
    const auto notSpace = [](unsigned char c) { return std::isspace(c) == 0; };
    const auto begin = std::find_if(s.begin(), s.end(), notSpace);
    const auto end = std::find_if(s.rbegin(), s.rend(), notSpace).base();
    return begin < end ? std::string(begin, end) : std::string();
}

// What to pass, for the "needs a …" message: says what the user has to do, per task.
std::string inputHint(const TaskInfo& task) {
    if (task.token == kCustomPromptTask)
        return "pass the prompt to send";
    if (std::none_of(kTasks.begin(), kTasks.end(),
                     [&](const TaskInfo& t) { return t.token == task.token; }))
        return "pass the text the task takes";
    if (task.input == TaskInput::Region)
        return "pass a box in pixels or four <loc_N> tokens";
    if (task.token == "<CAPTION_TO_PHRASE_GROUNDING>")
        return "pass the text to ground";
    if (task.token == "<REFERRING_EXPRESSION_SEGMENTATION>")
        return "pass the text describing what to segment";
    return "pass the text describing what to find";
}

// True when text is exactly four <loc_N> tokens with N in 0..999, the form the processor
// would pass through unchanged.
bool isFourLocTokens(const std::string& text) {
    static const std::string kPrefix = "<loc_";
    size_t pos = 0;
    for (int i = 0; i < 4; ++i) {
        if (text.compare(pos, kPrefix.size(), kPrefix) != 0)
            return false;
        pos += kPrefix.size();
        const size_t digitsBegin = pos;
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])) != 0)
            ++pos;
        const size_t digits = pos - digitsBegin;
        if (digits == 0 || digits > 3 || pos >= text.size() || text[pos] != '>')
            return false;
        ++pos;
    }
    return pos == text.size();
}

std::string formatPrompt(const std::string& format, const std::string& input) {
    std::string prompt = format;
    const size_t at = prompt.find("{input}");
    if (at != std::string::npos)
        prompt.replace(at, 7, input);
    return prompt;
}

} // namespace

const std::vector<TaskInfo>& allTasks() {
    return kTasks;
}

const TaskInfo& taskInfo(const std::string& token) {
    for (const TaskInfo& task : kTasks) {
        if (task.token == token)
            return task;
    }
    if (token == kCustomPromptTask)
        return customPrompt();
    {
        std::lock_guard<std::mutex> lock(g_addedMutex);
        // The latest details of a token; a deque never moves what it holds, so the reference
        // stays valid when more are added.
        for (auto it = g_added.rbegin(); it != g_added.rend(); ++it)
            if (it->token == token)
                return *it;
    }
    std::string known;
    for (const TaskInfo& task : kTasks)
        known += (known.empty() ? "" : ", ") + task.token;
    for (const TaskInfo& task : packageTasks())
        known += ", " + task.token;
    throw TaskError("unknown task '" + token.substr(0, 60) + (token.size() > 60 ? "…" : "") +
                    "'; known tasks: " + known);
}

void addPackageTasks(const std::vector<TaskInfo>& tasks) {
    std::lock_guard<std::mutex> lock(g_addedMutex);
    for (const TaskInfo& task : tasks) {
        const bool standard = task.token == kCustomPromptTask ||
                              std::any_of(kTasks.begin(), kTasks.end(),
                                          [&](const TaskInfo& t) { return t.token == task.token; });
        const auto same = std::find_if(g_added.rbegin(), g_added.rend(),
                                       [&](const TaskInfo& t) { return t.token == task.token; });
        if (standard || (same != g_added.rend() && sameTask(*same, task)))
            continue;
        g_added.push_back(task);
    }
}

std::vector<TaskInfo> packageTasks() {
    std::lock_guard<std::mutex> lock(g_addedMutex);
    std::vector<TaskInfo> out;
    for (const TaskInfo& task : g_added) {
        const auto at = std::find_if(out.begin(), out.end(),
                                     [&](const TaskInfo& t) { return t.token == task.token; });
        if (at == out.end())
            out.push_back(task);
        else
            *at = task;
    }
    return out;
}

int pixelToBin(double x, int size) {
    // A zero-sized axis or a NaN coordinate has no meaningful bin; 0 keeps callers total.
    if (size <= 0 || std::isnan(x))
        return 0;
    const double bin = std::floor(x / (size / 1000.0));
    return static_cast<int>(std::clamp(bin, 0.0, 999.0));
}

double binToPixel(int bin, int size) {
    return (bin + 0.5) * (size / 1000.0);
}

Box regionInImage(const Box& box, int imageWidth, int imageHeight) {
    // Boxes dragged right-to-left or bottom-to-top arrive with swapped corners; the model wants
    // x1 <= x2 and y1 <= y2.
    return Box{std::clamp(std::min(box.x1, box.x2), 0.0, double(imageWidth)),
               std::clamp(std::min(box.y1, box.y2), 0.0, double(imageHeight)),
               std::clamp(std::max(box.x1, box.x2), 0.0, double(imageWidth)),
               std::clamp(std::max(box.y1, box.y2), 0.0, double(imageHeight))};
}

std::string regionToLocTokens(const Box& box, int imageWidth, int imageHeight) {
    if (imageWidth <= 0 || imageHeight <= 0)
        throw TaskError("cannot place a region on an image of " + std::to_string(imageWidth) + "x" +
                        std::to_string(imageHeight) + " pixels");
    if (std::isnan(box.x1) || std::isnan(box.y1) || std::isnan(box.x2) || std::isnan(box.y2))
        throw TaskError("the region has an undefined coordinate");
    const auto [x1, y1, x2, y2] = regionInImage(box, imageWidth, imageHeight);
    if (!(x2 > x1) || !(y2 > y1))
        throw TaskError("the region is empty once clipped to the " + std::to_string(imageWidth) +
                        "x" + std::to_string(imageHeight) +
                        " image: it must cover part of the image");
    return "<loc_" + std::to_string(pixelToBin(x1, imageWidth)) + "><loc_" +
           std::to_string(pixelToBin(y1, imageHeight)) + "><loc_" +
           std::to_string(pixelToBin(x2, imageWidth)) + "><loc_" +
           std::to_string(pixelToBin(y2, imageHeight)) + ">";
}

namespace {

// User text quoted in a message: at most 60 bytes (whole UTF-8 characters) and one line, so a
// pasted 120 KB text does not come back as the error.
std::string quoted(const std::string& text) {
    std::string out;
    for (size_t i = 0; i < text.size() && out.size() < 60; ++i) {
        const char c = text[i];
        out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
    }
    if (out.size() < text.size()) {
        while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80)
            out.pop_back(); // continuation bytes of a character cut in two
        if (!out.empty() && (static_cast<unsigned char>(out.back()) & 0x80))
            out.pop_back(); // its lead byte
        out += "…";
    }
    return "\"" + out + "\"";
}

} // namespace

Box parseRegion(const std::string& text) {
    const auto fail = [&] {
        return TaskError("a region is four numbers X1,Y1,X2,Y2 in pixels, not '" + text + "'");
    };
    std::vector<double> v;
    size_t begin = 0;
    while (begin <= text.size()) {
        const size_t comma = std::min(text.find(',', begin), text.size());
        const std::string part = text.substr(begin, comma - begin);
        try {
            size_t used = 0;
            v.push_back(std::stod(part, &used));
            if (part.find_first_not_of(" \t", used) != std::string::npos)
                throw fail();
        } catch (const std::exception&) {
            throw fail();
        }
        begin = comma + 1;
    }
    if (v.size() != 4 ||
        !std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }))
        throw fail();
    return Box{v[0], v[1], v[2], v[3]};
}

std::string buildPrompt(const TaskRequest& request, int imageWidth, int imageHeight) {
    const TaskInfo& task = taskInfo(request.task);
    const bool hasText = !isBlank(request.text);

    if (task.input == TaskInput::None) {
        // The original processor asserts that the text is the task token alone.
        if (hasText)
            throw TaskError(task.token + " takes no text, but got " + quoted(request.text) +
                            ": remove the text or pick a task that uses it");
        if (request.region)
            throw TaskError(task.token + " takes no region: leave it out or pick a region task");
        return task.promptFormat;
    }

    if (!hasText && !(task.input == TaskInput::Region && request.region))
        throw TaskError(task.token + " needs a " + task.inputLabel + ": " + inputHint(task));

    // A free prompt is sent as it is, task tokens included: a fine-tune's task may be its
    // token alone.
    if (task.token == kCustomPromptTask)
        return request.text;
    // The original processor asserts when a prompt holds a task token besides its own, and
    // replaces every copy of its own; refusing both keeps the prompt what the user sees.
    for (const TaskInfo& other : kTasks) {
        if (request.text.find(other.token) != std::string::npos)
            throw TaskError("the " + task.inputLabel + " for " + task.token +
                            " must not contain the task token " + other.token);
    }

    if (task.input == TaskInput::Text) {
        if (request.region)
            throw TaskError(task.token + " takes a " + task.inputLabel +
                            ", not a region: leave the region out");
        // Passed verbatim, as the original does (it does not trim), so prompts match it.
        return formatPrompt(task.promptFormat, request.text);
    }

    if (request.region) {
        if (hasText)
            throw TaskError(task.token +
                            " got both a region and text: pass the region one way, not both");
        return formatPrompt(task.promptFormat,
                            regionToLocTokens(*request.region, imageWidth, imageHeight));
    }
    const std::string locs = trimmed(request.text);
    if (!isFourLocTokens(locs))
        throw TaskError(task.token + " needs a region: " + quoted(request.text) +
                        " is not four <loc_N> tokens (N 0-999); " + inputHint(task));
    return formatPrompt(task.promptFormat, locs);
}

} // namespace florence

// Florence-2's 15 tasks: the task table, prompt construction and region quantization
// (docs/florence2-tasks.md).
//
//   const florence::TaskInfo& t = florence::taskInfo("<REGION_TO_CATEGORY>"); // throws TaskError
//   florence::TaskRequest req{"<REGION_TO_CATEGORY>", "", florence::Box{10, 20, 200, 300}};
//   std::string prompt = florence::buildPrompt(req, 1000, 667);
//   // "What is the region <loc_10><loc_29><loc_200><loc_449>?"
#pragma once

#include <florence/error.h>

#include <optional>
#include <string>
#include <vector>

namespace florence {

enum class AnswerType {
    PureText,
    DescriptionWithBboxes,
    Bboxes,
    Ocr,
    PhraseGrounding,
    Polygons,
    DescriptionWithBboxesOrPolygons,
};

enum class TaskInput { None, Text, Region };

struct TaskInfo {
    std::string token;        // "<OD>"
    std::string name;         // readable name for menus: "Object detection"
    std::string promptFormat; // "Locate {input} in the image."; no {input} when input is None
    TaskInput input = TaskInput::None;
    std::string
        inputLabel; // what the input is, for messages and UI labels ("caption", "phrase", "region")
    AnswerType answerType = AnswerType::PureText;
};

// All 15 tasks in TASKS.md order.
const std::vector<TaskInfo>& allTasks();
// A standard task, the custom prompt or a package's own task (addPackageTasks). Throws
// TaskError ("unknown task '<FOO>'; known tasks: …") for an unknown token.
const TaskInfo& taskInfo(const std::string& token);

// The free prompt (the app's "Custom prompt…", the CLI's run --prompt): the text is sent as it
// is and the answer is text. Known to taskInfo and buildPrompt; not in allTasks().
inline constexpr const char* kCustomPromptTask = "<CUSTOM_PROMPT>";

// Makes a package's own tasks (a fine-tune's, listed in its manifest) known to taskInfo,
// buildPrompt and the answer parser for the rest of the process; Model::load adds its
// package's. A standard task or the custom prompt cannot be redefined (such entries are
// skipped); a token added again with other details replaces the earlier one.
void addPackageTasks(const std::vector<TaskInfo>& tasks);
// The tasks added so far, each token once with its latest details, in the order first added.
std::vector<TaskInfo> packageTasks();

// A box in pixels of the original image: x1, y1, x2, y2.
struct Box {
    double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

struct TaskRequest {
    std::string task;          // task token
    std::string text;          // user text; for region tasks may already be four <loc_N> tokens
    std::optional<Box> region; // for region tasks, in pixels of the original image
};

// A region as a user types it, "X1,Y1,X2,Y2" in pixels (spaces allowed around the numbers),
// as the CLI's and the app's --region take it. The corners may come in any order. Throws
// TaskError quoting the text when it is not four numbers.
Box parseRegion(const std::string& text);

// Pixel → location bin: clamp(floor(x / (size/1000)), 0, 999).
int pixelToBin(double x, int size);
// Bin → pixel: (bin + 0.5) * size/1000.
double binToPixel(int bin, int size);
// The box with its corners in order (x1 <= x2, y1 <= y2) and clipped to the image, as the
// model is asked about it; empty (x2 <= x1 or y2 <= y1) when it lies outside the image.
Box regionInImage(const Box& box, int imageWidth, int imageHeight);
// "<loc_a><loc_b><loc_c><loc_d>" for regionInImage(box); throws TaskError when it is empty.
std::string regionToLocTokens(const Box& box, int imageWidth, int imageHeight);

// The text fed to the model. Throws TaskError with a message saying what is missing (a task that
// needs text or a region without it) or wrong.
std::string buildPrompt(const TaskRequest& request, int imageWidth, int imageHeight);

} // namespace florence

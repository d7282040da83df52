// florence-studio-cli: the engine from the command line (import, run, compare, tokenize, parse,
// bench).
#include "Args.h"
#include "Batch.h"
#include "Bench.h"
#include "Common.h"
#include "Compare.h"
#include <florence/annotate.h>
#include <florence/answer.h>
#include <florence/answer_json.h>
#include <florence/batch.h>
#include <florence/engine.h>
#include <florence/files.h>
#include <florence/image.h>
#include <florence/import_job.h>
#include <florence/machine.h>
#include <florence/paths.h>
#include <florence/process.h>
#include <florence/safetensors.h>
#include <florence/tasks.h>
#include <florence/version.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

using florence::cli::Args;
using florence::cli::g_cancel;
using florence::cli::modelDir;
using florence::cli::parseArgs;
using florence::cli::resultJson;
using florence::cli::runOptions;
using florence::cli::UsageError;

const char* kUsage = R"(usage: florence-studio-cli COMMAND [OPTIONS]

Commands:
  run       Run a Florence-2 task on an image, or on many in batches
              --image FILE | --pixel-values FILE.safetensors   (one is required)
              --image FILE --image FILE2 ... | --images DIR    several images, each printed
                                  as it completes (--batch-size at a time in memory)
              --batch-size N      images decoded together (default 4)
              --task TOKEN        task token, e.g. "<CAPTION>" (default <CAPTION>), or one
                                  of the model's own tasks (a fine-tune's: see tasks --model)
              --text STR          input text for tasks that take it
              --prompt TEXT       a free prompt instead of a task: sent as it is, answered
                                  as text
              --region X1,Y1,X2,Y2  region in pixels for region tasks
              --model PKG         model package (default: the bundled model)
              --beams N           beam count (default from the model, 3)
              --max-new-tokens N  generation length limit (default from the model)
              --ignore-eos        generate exactly --max-new-tokens, ignoring the end token
                                  (speed measurements; the speed-demo models always do)
              --no-cache          recompute the whole prefix every step (as a traced model)
              --threads N         intra-op threads (default: all cores)
              --precision P       auto (default, or $FLORENCE_PRECISION): the fastest of
                                  the three whose answers hold on this CPU, measured
                                  once per model and kept in the cache folder;
                                  float32 (exact); bfloat16 and int8 (smaller
                                  weights: faster, answers a little less exact):
                                  bfloat16 halves the weights (with AVX-512 the
                                  encoders too, else the decoder only); int8 quarters
                                  the decoder's and the encoders' large products
                                  (not encoders wider than base's), the rest float32
                                  (bfloat16 with AVX-512 when it lacks VNNI or
                                  the encoders are wider than base's)
              --json              print one JSON object with ids, text, result and timings
              --annotate OUT.png  write the image with the answer drawn on it
              --coco OUT.json     write the answer as COCO annotations
              --jsonl             one compact JSON line per image, as each completes
              --quiet             do not stream tokens to stderr
              --no-exif-rotate    the pixels as stored, ignoring a photo's EXIF orientation
                                  (as Florence-2's Python processor; default: upright)
  batch     Run a task on a folder of images, writing each answer beside it (see batch --help)
              --dir DIR [--recursive] --task TOKEN [--text STR] [--out OUT]
              [--resume | --overwrite] [--format txt,json,coco,jsonl] [--jsonl]
  compare   The same run with and without the key/value cache, side by side:
              compare IMAGE|--image IMAGE [--task TOKEN] [--text STR] [--region X1,Y1,X2,Y2]
              [--max-new-tokens N] [--repeats N] [--model PKG] [--json] [--quiet] [--no-warmup]
              [--prompt TEXT] [--beams N] [--precision P] [--threads N] [--ignore-eos]
              [--no-exif-rotate]  as for run
                                  a warm-up, then the two alternate --repeats times each
                                  (default 3; up to two more while they disagree); prints
                                  the medians, the speedup and whether the answers match
                                  (where not, from which token and how far apart)
  import    Make a model package
              --hf DIR | --random-init tiny|base|large  [--seed N]  --out PKG
  tokenize  Print token ids as JSON:  tokenize [--model PKG] TEXT
  parse     Parse an answer text without a model:
              parse --task TOKEN --image-size W H [--format hf|native] [--region X1,Y1,X2,Y2] TEXT
  bench     Measure speed at real model sizes (see bench --help)
  models    List the installed model packages (folder, then name), for --model
  tasks     List the 15 tasks, and a model's own ones:  tasks [--model PKG]
              (token, name, input, prompt sent; tab-separated)

  --help, --version
)";

QJsonArray idsJson(const std::vector<int64_t>& ids) {
    QJsonArray arr;
    for (int64_t id : ids)
        arr.append(static_cast<qint64>(id));
    return arr;
}

// `COMMAND --help`: the usage's lines of that command (its line and those indented under it), or
// the whole usage for a command it does not list.
std::string commandUsage(const std::string& cmd) {
    const std::string usage = kUsage;
    const size_t begin = usage.find("\n  " + cmd + " ");
    if (begin == std::string::npos)
        return usage;
    size_t end = begin + 1;
    while ((end = usage.find("\n  ", end + 1)) != std::string::npos && usage[end + 3] == ' ') {
    }
    std::string lines = usage.substr(begin + 1, end == std::string::npos ? end : end - begin);
    while (!lines.empty() && lines.back() == '\n')
        lines.pop_back();
    return "usage: florence-studio-cli " + cmd + " [OPTIONS]\n\n" + lines +
           "\n\nflorence-studio-cli --help lists the other commands.\n";
}

void printJson(const QJsonObject& o) {
    std::cout << QJsonDocument(o).toJson(QJsonDocument::Indented).toStdString();
}

void writeJsonFile(const std::string& path, const QJsonObject& o) {
    // Whole or not at all; a full disk or a device here is an error naming the file.
    florence::writeFileAtomically(path, QJsonDocument(o).toJson(QJsonDocument::Indented));
}

// The images of a folder, sorted by name, as `batch` lists them (florence::listImages: a FIFO,
// a device or a broken link named like an image is listed, and refused with its reason).
std::vector<std::string> imagesInFolder(const std::string& dir) {
    std::vector<std::string> files = florence::listImages(dir, false);
    if (files.empty())
        throw std::runtime_error("folder " + dir + " holds no images");
    return files;
}

// The images of a run: --image (repeatable) and --images DIR, checked against the options that
// take a single image.
std::vector<std::string> runImagePaths(Args& a) {
    std::vector<std::string> paths =
        a.values.count("image") ? a.values["image"] : std::vector<std::string>{};
    if (a.has("images")) {
        const auto more = imagesInFolder(a.get("images"));
        paths.insert(paths.end(), more.begin(), more.end());
    }
    if (paths.empty() && !a.has("pixel-values"))
        throw UsageError("run needs --image FILE (or --images DIR, or --pixel-values FILE)");
    if (!paths.empty() && a.has("pixel-values"))
        throw UsageError("--pixel-values is the image already preprocessed: give it or --image, "
                         "not both");
    if (paths.size() > 1 && (a.has("pixel-values") || a.has("annotate") || a.has("coco")))
        throw UsageError("--pixel-values, --annotate and --coco take a single image");
    return paths;
}

// One request per image (or one for --pixel-values), with the prompt built for its size.
struct RunInputs {
    std::vector<std::string> paths;
    std::vector<florence::Request> requests;
    std::vector<std::pair<int, int>> sizes; // the size locations map to, per request
    florence::TaskRequest task;
};

RunInputs loadRunInputs(Args& a, const florence::TaskRequest& task,
                        std::vector<std::string> paths) {
    RunInputs in;
    in.paths = std::move(paths);
    in.requests.resize(std::max<size_t>(1, in.paths.size()));
    for (size_t i = 0; i < in.paths.size(); ++i)
        in.requests[i].image = std::make_shared<const florence::RgbImage>(
            florence::loadImage(in.paths[i], florence::cli::decodeOptions(a)));
    if (a.has("pixel-values")) {
        const auto file = florence::SafetensorsFile::open(a.get("pixel-values"));
        if (!file.contains("pixel_values"))
            throw std::runtime_error(a.get("pixel-values") + " has no pixel_values tensor");
        in.requests[0].pixelValues = file.toFloat("pixel_values");
    }
    in.task = task;
    if (a.has("region"))
        in.task.region = florence::cli::regionOption(a);
    return in;
}

// Prompts before the model: a task missing its input fails before anything loads.
void buildPrompts(RunInputs& in) {
    for (size_t i = 0; i < in.requests.size(); ++i) {
        florence::Request& req = in.requests[i];
        // Location tokens map to the original image; with pixel values only, to the model input.
        const int w = req.image ? req.image->width : 768;
        const int h = req.image ? req.image->height : 768;
        in.sizes.emplace_back(w, h);
        req.prompt = florence::buildPrompt(in.task, w, h);
        if (req.image)
            florence::cli::noteClippedRegion(in.task, in.paths[i], w, h);
    }
}

// How many rows `text` takes on a terminal `columns` wide (a character a column).
int terminalRows(const std::string& text, int columns) {
    int rows = 1, column = 0;
    for (const unsigned char c : text) {
        if ((c & 0xC0) == 0x80)
            continue; // a UTF-8 continuation byte
        if (c == '\n' || column == columns) {
            ++rows;
            column = c == '\n' ? 0 : 1;
        } else {
            ++column;
        }
    }
    return rows;
}

// Runs the one request, streaming its text to stderr unless --quiet: as a person reads it
// (readableText: no </s>, <s> or <loc_…>), the whole answer is the document on stdout. Beam
// search may switch to another hypothesis: on a terminal the text shown is rewritten in place;
// elsewhere (a file, a pipe) a beam search's text comes once, when it is final.
florence::Result generateOne(florence::Session& session, const florence::Request& request,
                             florence::GenerationOptions opts, bool quiet) {
    opts.cancel = &g_cancel;
    struct Streamed {
        std::string generated; // the best hypothesis's text with its model tokens
        std::string shown;     // what stderr has of it
    };
    auto streamed = std::make_shared<Streamed>();
    const bool terminal = isatty(STDERR_FILENO) == 1;
    const auto show = [streamed, terminal](const std::string& generated) {
        std::string text = florence::readableText(generated);
        text.erase(0, std::min(text.size(), text.find_first_not_of(' ')));
        if (text.compare(0, streamed->shown.size(), streamed->shown) == 0) {
            std::cerr << text.substr(streamed->shown.size());
        } else if (terminal) {
            winsize size{};
            const int columns =
                ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? size.ws_col : 80;
            const int up = terminalRows(streamed->shown, columns) - 1;
            if (up > 0)
                std::cerr << "\033[" << up << "A";
            std::cerr << "\r\033[J" << text; // from the start of the old text, erased
        } else {
            std::cerr << "\n" << text;
        }
        std::cerr << std::flush;
        streamed->shown = std::move(text);
    };
    if (!quiet && (terminal || opts.numBeams <= 1))
        opts.onToken = [streamed, show](const florence::TokenEvent& e) {
            streamed->generated =
                e.rewound || e.step == 0 ? e.textDelta : streamed->generated + e.textDelta;
            show(streamed->generated);
            return true;
        };
    florence::Result result = session.generate(request, opts);
    if (!quiet && !opts.onToken)
        show(result.text);
    if (!streamed->shown.empty())
        std::cerr << "\n";
    return result;
}

// Whether image `i` was turned by its EXIF orientation; unknown for --pixel-values.
std::optional<bool> orientationOf(const RunInputs& in, size_t i) {
    if (in.paths.empty() || !in.requests[i].image)
        return std::nullopt;
    return in.requests[i].image->orientationApplied;
}

// --annotate and --coco, checked before the model loads: a file name they cannot write would
// end the run after the answer, and the image being answered is never written over.
// The note on an answer that ran to --max-new-tokens; `image` names it when there are several.
// Not with --quiet, which scripts use (the document says it: reached_token_limit).
void noteCutAnswer(const std::string& image, int maxNewTokens) {
    std::cerr << "note: " << (image.empty() ? "" : image + ": ")
              << "the answer stopped at the token limit (--max-new-tokens " << maxNewTokens
              << ") and may be cut short\n";
}

void checkOutputFiles(const Args& a, const RunInputs& in) {
    const auto sameAsInput = [&](const std::string& out) {
        const QFileInfo o(QString::fromStdString(out));
        for (const std::string& image : in.paths) {
            const QFileInfo i(QString::fromStdString(image));
            if (o.exists() && i.exists() && o.canonicalFilePath() == i.canonicalFilePath())
                return true;
        }
        return false;
    };
    for (const char* option : {"annotate", "coco"}) {
        if (!a.has(option))
            continue;
        const std::string out = a.get(option);
        if (sameAsInput(out))
            throw UsageError(std::string("--") + option + " " + out +
                             " is the image being answered; name another file");
        // A name that cannot be written is a wrong argument (exit 2), as the input's own name.
        if (std::string(option) == "annotate") {
            if (!in.requests[0].image)
                throw UsageError("--annotate needs --image");
            try {
                florence::checkImageDestination(out);
            } catch (const florence::ImageError& e) {
                throw UsageError(e.what());
            }
        } else if (const std::string why = florence::whyNotAFileDestination(out); !why.empty()) {
            throw UsageError(why);
        }
    }
}

// Writes --annotate and --coco for one answer (checkOutputFiles checked their names): the
// answer as a person reads it, as the app draws it and the answer document's COCO part holds it
// (no "</s>" in a first OCR line's label; a region task's answer a box on the region asked about).
void writeAnswerFiles(Args& a, const RunInputs& in, size_t i,
                      const florence::ParsedAnswer& parsed) {
    const auto [w, h] = in.sizes[i];
    const florence::ParsedAnswer answer =
        florence::readableAnswer(parsed, florence::askedRegion(parsed, in.requests[i].prompt));
    if (a.has("annotate"))
        florence::saveAnnotatedImage(*in.requests[i].image, answer, a.get("annotate"));
    if (a.has("coco")) {
        const std::string name =
            in.paths.empty()
                ? "pixel_values"
                : QFileInfo(QString::fromStdString(in.paths[i])).fileName().toStdString();
        writeJsonFile(a.get("coco"), florence::toCocoJson(answer, name, w, h));
    }
}

// The answer itself (one JSON document appended to `documents` with --json, else printed: a
// --jsonl line or the Hugging Face form on one line); the parsed answer for writeAnswerFiles.
florence::ParsedAnswer reportAnswer(Args& a, const RunInputs& in, size_t i,
                                    const florence::Result& r,
                                    const florence::GenerationOptions& opts,
                                    const florence::Model& model, QJsonArray& documents) {
    const auto [w, h] = in.sizes[i];
    const florence::ParsedAnswer answer =
        florence::parseResult(model.tokenizer(), in.task.task, r, w, h);
    const std::string path = in.paths.empty() ? std::string() : in.paths[i];
    if (a.has("json")) {
        documents.append(
            resultJson(path, in.requests[i].prompt, r, answer, opts, model, orientationOf(in, i)));
        return answer;
    }
    if (a.has("jsonl")) {
        std::cout << florence::cli::jsonLine(
            resultJson(path, in.requests[i].prompt, r, answer, opts, model, orientationOf(in, i)));
        return answer;
    }
    std::cout << QJsonDocument(florence::toHuggingFaceJson(answer))
                     .toJson(QJsonDocument::Compact)
                     .toStdString()
              << "\n";
    return answer;
}

// Several images: each chunk of --batch-size images is decoded, answered and printed before the
// next is read, so memory does not grow with the number of images and the first answer comes
// at once. A file that cannot be read is reported and the others still run (exit 1 at the end).
int runMany(Args& a, florence::TaskRequest request, const std::vector<std::string>& paths,
            int batchSize) {
    if (a.has("region"))
        request.region = florence::cli::regionOption(a);
    if (florence::taskInfo(request.task).input == florence::TaskInput::Text)
        florence::buildPrompt(request, 1000, 1000); // text it refuses fails before the model loads
    auto model = florence::cli::loadModel(a);
    florence::GenerationOptions opts = runOptions(a, *model);
    opts.cancel = &g_cancel;
    florence::Session session(model);
    florence::cli::installCancelHandler();
    const bool json = a.has("json"), jsonl = a.has("jsonl"), quiet = a.has("quiet");
    size_t failed = 0, printed = 0;
    if (json)
        std::cout << "[\n";
    florence::ImageRunHooks hooks;
    hooks.onImageDone = [&](const florence::ImageOutcome& o) {
        if (o.error.empty())
            florence::cli::noteClippedRegion(request, o.path, o.width, o.height);
        if (o.error.empty() && o.result.reachedTokenLimit && !quiet)
            noteCutAnswer(o.path, opts.maxNewTokens);
        if (!o.error.empty()) {
            ++failed;
            std::cerr << "florence-studio-cli: error: " << o.error << "\n";
            if (jsonl)
                std::cout << florence::cli::jsonLine(florence::cli::failureJson(o));
        } else if (json || jsonl) {
            const QJsonObject doc = resultJson(o.path, o.prompt, o.result, o.answer, opts, *model,
                                               o.orientationApplied);
            if (jsonl)
                std::cout << florence::cli::jsonLine(doc);
            else
                std::cout << (printed++ > 0 ? ",\n" : "")
                          << QJsonDocument(doc).toJson(QJsonDocument::Indented).toStdString();
        } else {
            std::cout << o.path << "\t"
                      << QJsonDocument(florence::toHuggingFaceJson(o.answer))
                             .toJson(QJsonDocument::Compact)
                             .toStdString()
                      << "\n";
        }
        florence::cli::flushStdout(); // a full disk stops the run (exit 1)
        if (!quiet)
            std::cerr << "[" << o.index + 1 << "/" << paths.size() << "] "
                      << QFileInfo(QString::fromStdString(o.path)).fileName().toStdString()
                      << (o.error.empty() ? "" : " (failed)") << "\n";
        return true;
    };
    florence::runImages(session, paths, request, opts, batchSize, hooks,
                        florence::cli::decodeOptions(a));
    if (json)
        std::cout << "]\n";
    return g_cancel ? 130 : failed > 0 ? 1 : 0;
}

int cmdRun(int argc, char** argv) {
    Args a = parseArgs(argc, argv, 2,
                       {"image", "images", "pixel-values", "task", "text", "prompt", "region",
                        "model", "beams", "max-new-tokens", "threads", "annotate", "precision",
                        "batch-size", "coco"},
                       {"no-cache", "json", "jsonl", "quiet", "ignore-eos", "no-exif-rotate"});
    if (!a.positional.empty())
        throw UsageError("unexpected argument '" + a.positional[0] + "'");
    std::vector<std::string> paths = runImagePaths(a);
    const int batchSize = a.getInt("batch-size", 4);
    if (batchSize < 1)
        throw UsageError("--batch-size must be at least 1");
    const florence::TaskRequest task = florence::cli::taskRequest(a); // before loading anything
    florence::cli::checkRunNumbers(a); // wrong numbers, before an image is decoded
    if (a.has("json") && a.has("jsonl"))
        throw UsageError("--json and --jsonl exclude each other");
    if (paths.size() > 1)
        return runMany(a, task, paths, batchSize);
    RunInputs in = loadRunInputs(a, task, std::move(paths));

    buildPrompts(in);
    checkOutputFiles(a, in);
    auto model = florence::cli::loadModel(a);
    if (!in.requests[0].image) {
        in.sizes[0] = {model->manifest().imageWidth, model->manifest().imageHeight};
        in.requests[0].prompt =
            florence::buildPrompt(in.task, in.sizes[0].first, in.sizes[0].second);
    }
    const florence::GenerationOptions opts = runOptions(a, *model);

    florence::Session session(model);
    florence::cli::installCancelHandler();
    const florence::Result result = generateOne(session, in.requests[0], opts, a.has("quiet"));
    QJsonArray documents;
    const florence::ParsedAnswer answer = reportAnswer(a, in, 0, result, opts, *model, documents);
    if (a.has("json"))
        std::cout
            << QJsonDocument(documents[0].toObject()).toJson(QJsonDocument::Indented).toStdString();
    // After the answer is out: a file that cannot be written (a full disk) loses no answer.
    florence::cli::flushStdout();
    if (result.reachedTokenLimit && !a.has("quiet"))
        noteCutAnswer({}, opts.maxNewTokens);
    writeAnswerFiles(a, in, 0, answer);
    if (!result.cancelled)
        return 0;
    // The answer printed is what came before Ctrl+C: said where a person reads it (the JSON says
    // "cancelled": true).
    std::cerr << "florence-studio-cli: interrupted after " << result.tokenLogprobs.size()
              << " tokens: the answer printed is what came before\n";
    return 130;
}

int cmdImport(int argc, char** argv) {
    Args a = parseArgs(argc, argv, 2, {"hf", "random-init", "out", "seed"}, {});
    if (!a.positional.empty())
        throw UsageError("unexpected argument '" + a.positional[0] + "'");
    if (!a.has("out"))
        throw UsageError("import needs --out PKG");
    if (a.has("hf") == a.has("random-init"))
        throw UsageError("import needs either --hf DIR or --random-init tiny|base|large");
    florence::ImportJobParams params;
    params.hfDir = a.get("hf");
    params.randomInit = a.get("random-init");
    if (!params.randomInit.empty() && params.randomInit != "tiny" && params.randomInit != "base" &&
        params.randomInit != "large")
        throw UsageError("--random-init takes tiny, base or large, not '" + params.randomInit +
                         "'");
    params.seed = a.getInt("seed", 1234);
    params.outDir = a.get("out");
    florence::cli::installCancelHandler();
    const florence::ImportJobResult result =
        florence::ImportJob(params).run(&g_cancel, [](int percent, const std::string& msg) {
            std::cerr << "[" << percent << "%] " << msg << "\n";
        });
    if (!result.ok)
        throw florence::ImportError(result.error);
    std::cerr << "wrote " << result.packageDir << "\n";
    return 0;
}

int cmdTokenize(int argc, char** argv) {
    Args a = parseArgs(argc, argv, 2, {"model"}, {});
    if (a.positional.size() != 1)
        throw UsageError("tokenize takes one TEXT argument");
    const florence::Manifest m = florence::readManifest(modelDir(a));
    const florence::Tokenizer tok =
        florence::Tokenizer::fromFiles(m.path("vocab"), m.path("merges"));
    std::cout << QJsonDocument(idsJson(tok.encode(a.positional[0])))
                     .toJson(QJsonDocument::Compact)
                     .toStdString()
              << "\n";
    return 0;
}

int cmdParse(int argc, char** argv) {
    Args a = parseArgs(argc, argv, 2, {"task", "image-size", "format", "region"}, {},
                       {{"image-size", 2}});
    if (!a.has("task"))
        throw UsageError("parse needs --task TOKEN");
    if (!a.values.count("image-size") || a.values["image-size"].size() != 2)
        throw UsageError("parse needs --image-size W H");
    if (a.positional.size() != 1)
        throw UsageError("parse takes one TEXT argument (the generated answer)");
    const std::string task = a.get("task");
    florence::cli::taskOption(task);
    int wh[2];
    for (int i = 0; i < 2; ++i) {
        const std::string& v = a.values["image-size"][i];
        try {
            size_t pos = 0;
            wh[i] = std::stoi(v, &pos);
            if (pos != v.size() || wh[i] <= 0)
                throw std::invalid_argument(v);
        } catch (const std::exception&) {
            throw UsageError("--image-size takes two positive whole numbers, not '" + v + "'");
        }
    }
    const std::string format = a.get("format", "hf");
    if (format != "hf" && format != "native")
        throw UsageError("--format takes hf or native, not '" + format + "'");
    const auto answer = florence::parseAnswer(task, a.positional[0], wh[0], wh[1]);
    // The native form is what a person reads; a region task's answer is an item for the region
    // asked about (--region), as in the answer document.
    std::optional<florence::Box> region;
    if (a.values.count("region"))
        region = florence::cli::regionOption(a);
    printJson(format == "hf"
                  ? florence::toHuggingFaceJson(answer)
                  : florence::nativeForm(answer, florence::readableAnswer(answer, region)));
    return 0;
}

// The packages the app's model list offers from the install and the user's models folder
// (folders opened once in the app are its own setting): the bundled model, the speed demos,
// then imported and generated packages.
int cmdModels(int argc, char** argv) {
    Args a = parseArgs(argc, argv, 2, {}, {});
    if (!a.positional.empty())
        throw UsageError("unexpected argument '" + a.positional[0] + "'");
    std::vector<std::string> dirs;
    if (!florence::bundledModelDir().empty())
        dirs.push_back(florence::bundledModelDir());
    for (const std::string& d : florence::speedDemoModelDirs())
        dirs.push_back(d);
    const QDir user(QString::fromStdString(florence::userModelsDir()));
    for (const QString& sub : user.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
        if (QFileInfo::exists(user.filePath(sub) + "/manifest.json"))
            dirs.push_back(user.filePath(sub).toStdString());
    if (dirs.empty()) {
        std::cerr << "no model packages found (the bundled model is missing and "
                  << florence::userModelsDir() << " holds none)\n";
        return 1;
    }
    for (const std::string& dir : dirs) {
        try {
            std::cout << dir << "\t" << florence::readManifest(dir).name << "\n";
        } catch (const std::exception& e) {
            std::cout << dir << "\t(damaged: " << e.what() << ")\n";
        }
    }
    return 0;
}

int cmdTasks(int argc, char** argv) {
    Args a = parseArgs(argc, argv, 2, {"model"}, {});
    // What a task needs, as `run` takes it, and the prompt it sends ({input}: the text or region).
    const auto line = [](const florence::TaskInfo& t) {
        const std::string input = t.input == florence::TaskInput::Text ? "--text " + t.inputLabel
                                  : t.input == florence::TaskInput::Region ? "--region X1,Y1,X2,Y2"
                                                                           : "no input";
        // A package's name or prompt may hold tabs or line breaks: one task stays one line.
        const auto field = [](std::string s) {
            std::replace_if(
                s.begin(), s.end(), [](char c) { return c == '\t' || c == '\n' || c == '\r'; },
                ' ');
            return s;
        };
        std::cout << field(t.token) << "\t" << field(t.name) << "\t" << input << "\t"
                  << field(t.promptFormat) << "\n";
    };
    for (const auto& t : florence::allTasks())
        line(t);
    if (a.has("model")) // a fine-tune's own tasks
        for (const florence::TaskInfo& t : florence::readManifest(modelDir(a)).tasks)
            line(t);
    return 0;
}

} // namespace

// The command's exit code.
int runCommand(const std::string& cmd, int argc, char** argv) {
    if (cmd == "run")
        return cmdRun(argc, argv);
    if (cmd == "batch")
        return florence::cli::runBatch(argc, argv);
    if (cmd == "compare")
        return florence::cli::runCompare(argc, argv);
    if (cmd == "import")
        return cmdImport(argc, argv);
    if (cmd == "tokenize")
        return cmdTokenize(argc, argv);
    if (cmd == "parse")
        return cmdParse(argc, argv);
    if (cmd == "tasks")
        return cmdTasks(argc, argv);
    if (cmd == "models")
        return cmdModels(argc, argv);
    if (cmd == "bench")
        return florence::cli::runBench(argc, argv);
    throw UsageError("unknown command '" + cmd + "' (try --help)");
}

int main(int argc, char** argv) {
    // The commands that run a model; the others start without the re-execution it may take
    // (about 0.35 s here: the libraries load twice).
    if (argc >= 2 && (std::strcmp(argv[1], "run") == 0 || std::strcmp(argv[1], "batch") == 0 ||
                      std::strcmp(argv[1], "compare") == 0 || std::strcmp(argv[1], "bench") == 0))
        florence::prepareProcess(argc, argv);
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName("florence-studio-cli");
    QCoreApplication::setApplicationVersion(FLORENCE_VERSION);
    if (argc < 2) {
        std::cerr << kUsage;
        return 2;
    }
    const std::string cmd = argv[1];
    try {
        if (cmd == "--help" || cmd == "-h" || cmd == "help") {
            std::cout << kUsage;
            return 0;
        }
        if (cmd == "--version") {
            std::cout << "florence-studio-cli " << FLORENCE_VERSION << "\n";
            return 0;
        }
        for (int i = 2; i < argc; ++i)
            if (std::string(argv[i]) == "--help" && cmd != "bench" && cmd != "batch") {
                std::cout << commandUsage(cmd);
                return 0;
            }
        const int code = runCommand(cmd, argc, argv);
        // What was printed must have arrived: stdout on a full disk is an error, not exit 0.
        florence::cli::flushStdout();
        return code;
    } catch (const UsageError& e) {
        std::cerr << "florence-studio-cli: " << e.what() << "\n";
        return 2;
    } catch (const florence::cli::Interrupted& e) {
        std::cerr << "florence-studio-cli: " << e.what() << "\n";
        return 130;
    } catch (const std::exception& e) {
        std::cerr << "florence-studio-cli: error: " << e.what() << "\n";
        return 1;
    }
}

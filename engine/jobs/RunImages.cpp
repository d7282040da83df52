#include <florence/batch.h>

#include <algorithm>
#include <memory>

namespace florence {

namespace {

// One decoded image waiting for the model, or an image that already failed.
struct Pending {
    ImageOutcome outcome;
    Request request;
};

Pending decode(size_t index, const std::string& path, const TaskRequest& task,
               const DecodeOptions& decodeOptions) {
    Pending p;
    p.outcome.index = index;
    p.outcome.path = path;
    try {
        p.request.image = std::make_shared<const RgbImage>(loadImage(path, decodeOptions));
        p.outcome.orientationApplied = p.request.image->orientationApplied;
        p.outcome.width = p.request.image->width;
        p.outcome.height = p.request.image->height;
        p.request.prompt = buildPrompt(task, p.outcome.width, p.outcome.height);
        p.outcome.prompt = p.request.prompt;
    } catch (const std::exception& e) {
        p.outcome.error = e.what();
        p.request = Request{};
    }
    return p;
}

// Runs the decoded images of one chunk together; an engine error fails each of them.
void answer(Session& session, std::vector<Pending>& chunk, const TaskRequest& task,
            const GenerationOptions& options, const ImageStartCallback& onStart) {
    std::vector<Request> requests;
    std::vector<Pending*> owners;
    for (Pending& p : chunk) {
        if (!p.outcome.error.empty())
            continue;
        if (onStart)
            onStart(p.outcome.index, p.outcome.path, *p.request.image);
        requests.push_back(std::move(p.request));
        owners.push_back(&p);
    }
    if (requests.empty())
        return;
    GenerationOptions chunkOptions = options;
    if (options.onToken)
        // The chunk's position of a request is not the caller's: name the image by its own.
        chunkOptions.onToken = [&](const TokenEvent& e) {
            TokenEvent image = e;
            image.index = owners[e.index]->outcome.index;
            return options.onToken(image);
        };
    try {
        std::vector<Result> results = session.generateBatch(requests, chunkOptions);
        for (size_t i = 0; i < owners.size(); ++i) {
            ImageOutcome& o = owners[i]->outcome;
            o.result = std::move(results[i]);
            o.answer =
                parseResult(session.model().tokenizer(), task.task, o.result, o.width, o.height);
        }
    } catch (const std::exception& e) {
        for (Pending* p : owners)
            p->outcome.error = e.what();
    }
}

} // namespace

size_t runImages(Session& session, const std::vector<std::string>& paths, const TaskRequest& task,
                 const GenerationOptions& options, int batchSize, const ImageRunHooks& hooks,
                 const DecodeOptions& decodeOptions) {
    const size_t step = static_cast<size_t>(std::max(1, batchSize));
    size_t reported = 0;
    auto cancelled = [&] { return options.cancel && options.cancel->load(); };
    for (size_t first = 0; first < paths.size() && !cancelled(); first += step) {
        // Only this chunk's images are decoded: memory does not grow with the list.
        std::vector<Pending> chunk;
        for (size_t i = first; i < std::min(paths.size(), first + step); ++i)
            chunk.push_back(decode(i, paths[i], task, decodeOptions));
        answer(session, chunk, task, options, hooks.onImageStarted);
        for (Pending& p : chunk) {
            // A generation cut short by cancel is no answer: it is not reported, so nothing of
            // it is written and a resumed run does it again.
            if (p.outcome.error.empty() && p.outcome.result.cancelled)
                return reported;
            ++reported;
            if (hooks.onImageDone && !hooks.onImageDone(p.outcome))
                return reported;
        }
    }
    return reported;
}

} // namespace florence

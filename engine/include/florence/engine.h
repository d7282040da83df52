// The Florence-2 engine: an immutable model loaded from a package folder, shared by pointer, and
// per-request sessions that own the key/value cache and the reusable image features.
//
//   auto model = florence::Model::load("resources/models/tiny");  // throws florence::Error
//   florence::Session session(model);
//   florence::Request req;
//   req.image = std::make_shared<const florence::RgbImage>(florence::loadImage("pier.png"));
//   req.prompt = florence::buildPrompt({"<CAPTION>", "", std::nullopt}, req.image->width,
//                                      req.image->height);
//   florence::GenerationOptions opts = model->defaultOptions();
//   opts.useCache = true;
//   opts.cancel = &stopFlag;  // set from another thread to stop
//   opts.onToken = [](const florence::TokenEvent& e) {
//       std::cerr << (e.rewound ? "\n" : "") << e.textDelta;
//       return true;  // false stops generation
//   };
//   florence::Result r = session.generate(req, opts);
#pragma once

#include <florence/error.h>
#include <florence/image.h>
#include <florence/package.h>
#include <florence/tokenizer.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace florence {

// How the model's weights are run.
enum class Precision {
    Float32,  // as exported
    BFloat16, // linear layers in bfloat16 (AVX512-BF16 kernels); norms, softmax, residuals float32
    // The decoder's linear layers and the LM head in int8, one scale per output channel,
    // quantized at load from the package's float32 weights; activations stay float32. The
    // encoders stay float32 except their linear layers of both sides >= 128, int8 on the
    // project's int8 GEMM (AVX2, AVX-VNNI or AVX-512 VNNI); on AVX-512 without VNNI they run as
    // in BFloat16 except their large linear layers, int8 through oneDNN (both sides >= 512).
    // Encoders wider than Florence-2-base's take no int8 and run as in BFloat16 (see
    // docs/performance.md, int8). On CPUs whose bfloat16 products are inaccurate, the encoders
    // stay float32 in both reduced precisions (Model::encoderPrecision).
    Int8,
};

// "float32" / "bfloat16" / "int8"
const char* precisionName(Precision p);

// What Model::load is doing, in the order it does it.
enum class LoadStage {
    VerifyingFiles,     // the files' sizes and checksums, and the modules' code
    ReadingVision,      // vision.pt into memory
    ReadingTextEncoder, // text_encoder.pt
    ReadingDecoder,     // decoder.pt
    PreparingWeights,   // generated and shared weights filled in, checked
    Quantizing,         // int8 weights made from the float32 ones (Precision::Int8 only)
};
// "verifying the files", "reading the vision encoder", …: for a status line.
const char* loadStageName(LoadStage stage);
// `fraction` is of the whole load (weighted by the bytes each stage reads): 0..1, never
// decreasing, and 1 exactly once, when the model is ready.
using LoadProgressCallback = std::function<void(LoadStage stage, double fraction)>;

struct LoadOptions {
    int threads = 0; // intra-op threads; 0 = all cores of the machine
    Precision precision = Precision::Float32;
    // Set from another thread to stop a load (between files, while hashing them, while reading
    // a module's archive and between generated parameters): load() then throws EngineError
    // "… was cancelled".
    const std::atomic<bool>* cancel = nullptr;
    // Called on the loading thread as the load advances, at most about once per percent.
    LoadProgressCallback onProgress = nullptr;
    // Called once the package's files are verified and its code checked, just before the
    // modules are read into memory: a caller replacing a model releases the old one here, so the
    // two are never in memory together, while a package refused by the checks leaves it alone.
    std::function<void()> beforeModules = nullptr;
};

// Reported once per decoding step of one request, with what the step added (CTranslate2's
// GenerationStepResult): whoever shows the whole text appends the deltas.
struct TokenEvent {
    size_t index = 0; // the request's position in generateBatch's list; 0 for generate()
    int step = 0;     // 0-based decoding step
    int64_t id = 0;   // token appended to the best hypothesis at this step
    // Text to append to what was reported so far; whole characters only. When `rewound`, the
    // whole text of the new best hypothesis, which replaces everything reported before (beam
    // search switched hypothesis: rare, so the whole text then is cheap).
    std::string textDelta;
    bool rewound = false;
    double stepMs = 0; // wall time of this step
    // The stages before decoding, known from the first token on (0 for a stage that was
    // skipped, e.g. the vision encoder when features were reused).
    double preprocessMs = 0;
    double visionMs = 0;
    double textEncoderMs = 0;
};
// Return false to stop generation after this step.
using TokenCallback = std::function<bool(const TokenEvent&)>;

struct GenerationOptions {
    int numBeams = 3; // 1 = greedy search
    int maxNewTokens =
        kDefaultMaxNewTokens;   // new tokens after the decoder start token, </s> included
    bool useCache = true;       // false: the whole prefix runs through the decoder at every step
    int noRepeatNgramSize = 3;  // 0 disables the n-gram ban
    double lengthPenalty = 1.0; // beam hypotheses are scored sum(logprob) / length^penalty
    bool earlyStopping = true;  // beam search ends once num_beams hypotheses are finished
    bool ignoreEos = false;     // keep generating to maxNewTokens (benchmarks)
    bool reuseFeatures = true;  // reuse the image features of the same image from an earlier run

    // The run's hooks, called on the thread that runs it (whisper's whisper_full_params).
    // After every decoding step of every request; false stops that request's generation,
    // which returns what it has with Result::cancelled set. Null: nothing is decoded to text
    // while generating.
    TokenCallback onToken = nullptr;
    // Set from another thread to stop: checked between the stages, within the encoders' passes
    // (at their own operators) and before every decoding step; a cancelled run returns what was
    // generated so far with Result::cancelled set.
    const std::atomic<bool>* cancel = nullptr;
};

struct Timings {
    double preprocessMs = 0;     // image resize and normalization
    double visionMs = 0;         // vision encoder + projection (0 when features were reused)
    double textEncoderMs = 0;    // prompt embedding + encoder
    double firstTokenMs = 0;     // from the start of generate() to the first token
    std::vector<double> stepMs;  // every decoding step
    double decodeMs = 0;         // all decoding steps
    double totalMs = 0;          // the whole generate()
    bool featuresReused = false; // the image features came from an earlier run
    // The text encoder's output for this image and prompt came from Session::encodeImage (run
    // ahead of the request); textEncoderMs is then 0 and featuresReused set.
    bool promptReused = false;
};

// What Session::encodeImage is asked to do beside the image.
struct EncodeOptions {
    // The task's prompt, whose text encoder output is made ready too; empty: the image alone.
    std::string prompt;
    // Set from another thread to skip what is not done yet (checked before preprocessing and
    // within the encoders' passes): the encoding then comes back `cancelled`.
    const std::atomic<bool>* cancel = nullptr;
    // Set from another thread to skip the prompt only (checked before the text encoder): a
    // newer prompt for the same image, whose features are still wanted. Comes back `cancelled`
    // when it skipped the prompt.
    const std::atomic<bool>* skipPrompt = nullptr;
};

// What Session::encodeImage did.
struct ImageEncoding {
    bool cancelled = false;      // stopped before its end (what was done is kept)
    bool alreadyEncoded = false; // this session held the image's features already
    double preprocessMs = 0;     // resize and normalization
    double visionMs = 0;         // vision encoder + projection
    // With a prompt: its text encoder output (and the decoder's cross-attention keys and
    // values) is ready for the next run of that prompt on the image.
    bool promptEncoded = false;
    bool promptAlreadyEncoded = false; // it was ready before this call
    double textEncoderMs = 0;          // text encoder + cross-attention projections
};

struct Request {
    // The original image (its size maps locations to pixels); shared and never changed, so
    // requests, passes and threads hold the same pixels without copying them. May be null
    // when pixelValues are given.
    std::shared_ptr<const RgbImage> image;
    std::vector<float> pixelValues; // optional: CHW model input that replaces preprocessing
    std::string prompt;             // text fed to the model, e.g. from buildPrompt()
};

struct Result {
    std::vector<int64_t> promptIds;
    std::vector<int64_t> generatedIds; // decoder start token first, as Hugging Face returns it
    std::string text;                  // decoded with special tokens kept
    // One per generated token (generatedIds without the decoder start): its log-probability
    // under the search that chose it, as Hugging Face's compute_transition_scores gives it with
    // normalized logits (greedy: log-softmax of the processed logits; beam: the token's processed
    // log-probability in the returned beam). Forced tokens have 0. parseAnswerTokens turns these
    // into a score per answer item.
    std::vector<float> tokenLogprobs;
    double score = 0;       // beam score of the returned hypothesis
    bool cancelled = false; // stopped by the cancel flag or the callback
    // Ran to GenerationOptions::maxNewTokens (where a package with a forced end token forces
    // </s>): the answer may be cut short. Also set when the model's own end fell exactly there;
    // never with ignoreEos, which runs to the limit by request.
    bool reachedTokenLimit = false;
    Timings timings;
};

struct ParsedAnswer; // <florence/answer.h>, which brings Qt's keywords that LibTorch's headers
                     // cannot follow
// The answer of a finished run for `task` on an image of imageWidth x imageHeight: parsed from
// its tokens, with the items' token spans and the confidence scores of Result::tokenLogprobs
// (see parseAnswerTokens). Torch-free.
ParsedAnswer parseResult(const Tokenizer& tokenizer, const std::string& task, const Result& result,
                         int imageWidth, int imageHeight);

// A tensor copied out of the engine, for tests and diagnostics.
struct FloatArray {
    std::vector<int64_t> shape;
    std::vector<float> data;
};

class Model {
public:
    // Loads and validates a model package folder. Throws EngineError naming the file at fault.
    static std::shared_ptr<const Model> load(const std::string& packageDir,
                                             const LoadOptions& options = {});
    ~Model();

    const Manifest& manifest() const;
    const Tokenizer& tokenizer() const;
    const LoadOptions& loadOptions() const;
    GenerationOptions defaultOptions() const; // from the package's generation settings
    double loadMs() const;

    // Bytes one cached decoding step must read for one hypothesis: every decoder weight it
    // multiplies (the LM head included, the precomputed cross-attention projections not), one
    // embedding row each, and the cross-attention keys/values of `encoderTokens` positions.
    // Divided by the memory bandwidth this is the floor no implementation can beat.
    int64_t decodeStepBytes(int encoderTokens) const;
    // Bytes of all weights in memory (parameters and buffers of the three modules); a tensor
    // two modules share counts once.
    int64_t weightBytes() const;
    // Every parameter as "role/name" (role: vision, text_encoder, decoder) with its shape, in
    // the modules' order: what a package loads into, whatever way its weights came.
    std::vector<std::pair<std::string, std::vector<int64_t>>> parameterShapes() const;
    // The modules (vision, text_encoder, decoder) whose products read int8 weights: empty but
    // in Precision::Int8, where an encoder is missing when its code predates int8 encoders or
    // when int8 would cost it too much accuracy (wider than Florence-2-base's).
    std::vector<std::string> int8Modules() const;
    // How the encoders run: the chosen precision, except float32 when the CPU's bfloat16
    // products are inaccurate (bfloat16ProductsAccurate() in <florence/machine.h>); the decoder
    // always runs in the chosen one. In int8 on the project's int8 GEMM the encoders stay
    // float32 but their large products run in int8 (int8Modules() names them): Int8, with a
    // note.
    Precision encoderPrecision() const;
    // Empty when everything runs in the chosen precision; otherwise one sentence for the user
    // saying what runs differently and why ("the encoders run in float32 and only …").
    std::string precisionNote() const;
    // Whether the cached decoding steps of one to four hypotheses run from C++ with the scripted
    // step's operators (the same results, without the interpreter's time between them): for a
    // package whose decoder code is this version's exporter's, unless FLORENCE_NATIVE_STEP=0.
    bool nativeStep() const;

    struct Impl; // defined where it is used: the LibTorch modules stay out of this header

private:
    friend class Session; // runs the modules
    const Impl& impl() const { return *m_impl; }
    Model();
    std::unique_ptr<Impl> m_impl;
};

struct PromptEncoding; // a text encoder output run ahead (Session::encodeImage with a prompt)

// Per-run state: the key/value cache and the features of the last image. Not thread-safe; use
// one session per thread.
class Session {
public:
    explicit Session(std::shared_ptr<const Model> model);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    const Model& model() const { return *m_model; }

    // Runs one request, reporting its steps to options.onToken and stopping at options.cancel.
    // Throws EngineError or ImageError.
    Result generate(const Request& request, const GenerationOptions& options);

    // Several requests decoded together: images through the vision encoder one at a time
    // (quicker than as one batch; an image two requests share, once), prompts padded to the
    // longest with a mask that keeps the padding out of attention, greedy decoding of all rows
    // at once. Each result equals what generate() gives for its request.
    // With beams > 1 the requests run one after another. Timings other than the steps are the
    // batch's. options.onToken hears every request's steps (TokenEvent::index says whose);
    // options.cancel stops them all.
    std::vector<Result> generateBatch(const std::vector<Request>& requests,
                                      const GenerationOptions& options);

    // Runs the vision encoder on `image` ahead of a request, keeping its features for the next
    // runs on the same image (GenerationOptions::reuseFeatures), so the first token of a run
    // does not wait for the encoder.
    // With a prompt (the task the user has chosen) the text encoder runs ahead too, so that
    // a run of exactly that prompt on the image starts decoding at once (Timings::promptReused);
    // the session keeps the last image's and prompt's.
    ImageEncoding encodeImage(const RgbImage& image, const EncodeOptions& options = {});

    // Diagnostics (parity tests, the precision probe, bench): the stages on their own. `cancel`,
    // when set from another thread, stops a pass at its next own operator and the array comes
    // back empty (no shape); a package of an earlier exporter runs each pass to its end.
    FloatArray imageFeatures(const std::vector<float>& pixelValues,
                             const std::atomic<bool>* cancel = nullptr);
    FloatArray encoderHidden(const std::vector<float>& pixelValues,
                             const std::vector<int64_t>& promptIds,
                             const std::atomic<bool>* cancel = nullptr);
    // Logits of one full decoder pass over `decoderIds`: [len, vocab].
    FloatArray decoderLogits(const std::vector<float>& pixelValues,
                             const std::vector<int64_t>& promptIds,
                             const std::vector<int64_t>& decoderIds,
                             const std::atomic<bool>* cancel = nullptr);

private:
    // `firstIndex`: the TokenEvent::index of requests[0].
    std::vector<Result> generateRows(const std::vector<Request>& requests,
                                     const GenerationOptions& options, size_t firstIndex);
    // encodeImage's text encoder output when it is for this one request's image and prompt.
    const PromptEncoding* promptEncodedAhead(const std::vector<Request>& requests,
                                             const GenerationOptions& options,
                                             const std::vector<Result>& results) const;

    std::shared_ptr<const Model> m_model;
    struct State;
    std::unique_ptr<State> m_state;
};

} // namespace florence

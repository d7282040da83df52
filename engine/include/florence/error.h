// The engine's one error hierarchy. Everything the engine throws about a file, a package, an
// image, a task or a run is a florence::Error whose what() a user can act on (it names the file
// or the field at fault), so a caller needs one catch:
//
//   try {
//       auto model = florence::Model::load(dir);
//   } catch (const florence::Error& e) {
//       showMessage(e.what());   // "…/manifest.json: format_version 3 is not supported …"
//   }
//
// The subclasses say which stage failed, for the callers that tell them apart (Model::load
// passes an EngineError through and wraps the others; the tests assert which stage refused a
// hostile input).
#pragma once

#include <stdexcept>

namespace florence {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Loading or running a model.
class EngineError : public Error {
public:
    using Error::Error;
};

// Reading or decoding an image file.
class ImageError : public Error {
public:
    using Error::Error;
};

// A model package's manifest or files.
class PackageError : public Error {
public:
    using Error::Error;
};

// Making a package with the exporter.
class ImportError : public Error {
public:
    using Error::Error;
};

// An unknown task or a task request missing its input.
class TaskError : public Error {
public:
    using Error::Error;
};

} // namespace florence

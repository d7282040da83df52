// Internal to the engine (includes LibTorch). One line a user can read from an error LibTorch or
// the TorchScript interpreter raised.
//
//   catch (const c10::Error& e) { throw EngineError("the model failed to run: " + oneLine(e)); }
#pragma once

#include <c10/util/Exception.h>

#include <string>

namespace florence::detail {

// Their messages carry a C++ backtrace and, from a module, a traceback of its Python source (57
// lines for a bad decoder start token); the last non-empty line is the error itself
// ("RuntimeError: index out of range in self"), cut at 200 characters.
std::string oneLine(const char* what);
std::string oneLine(const c10::Error& e);

} // namespace florence::detail

// Where the app's data lives: the bundled model, the exporter and the sample images. The build
// tree mirrors the installed layout (bin/ next to share/florence-studio/), so the same lookup
// works in both, and a relocated tarball finds its data next to its binaries.
//
//   std::string model = florence::bundledModelDir();   // "" when none is found
//   std::string script = florence::exporterScript();
#pragma once

#include <string>
#include <vector>

namespace florence {

// The data folder: $FLORENCE_STUDIO_DATA, else <executable>/../share/florence-studio.
std::string dataDir();
// The bundled model package folder, or "" when it is missing.
std::string bundledModelDir();
// The exporter entry point (tools/florence2_export.py), or "" when it is missing.
std::string exporterScript();
// The Python interpreter that has torch (the system one, /usr/bin/python3, unless
// $FLORENCE_PYTHON says otherwise).
std::string pythonInterpreter();
// The operator library (libflorence_ops.so) this program loaded, or "" when it has none. The
// exporter must load the same file before it scripts the model, so it is passed on explicitly.
std::string opsLibrary();
// The speed-demo packages installed with the app: Florence-2-base and -large architectures whose
// weights the engine generates at load (models/speed-demo-base, models/speed-demo-large), those
// that exist, smallest first.
std::vector<std::string> speedDemoModelDirs();
// Folder of sample images shipped with the app, or "".
std::string samplesDir();
// Where the user's imported and generated packages go (~/.local/share/florence-studio/models).
std::string userModelsDir();

} // namespace florence

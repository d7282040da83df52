// Florence-2 checkpoints already on the disk: the Hugging Face hub cache ($HF_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub; laid out as
// models--ORG--NAME/snapshots/REVISION/ with files that are symlinks into ../../blobs/) and the
// folders in ~/Downloads, for the import dialog and `import --hf ORG/NAME`.
//
//   for (const florence::FoundCheckpoint& c : florence::findCheckpoints())
//       std::cout << c.name << " " << c.revision << " " << c.layout << "\n";
//   std::string dir = florence::resolveCheckpoint("microsoft/Florence-2-base"); // a snapshot
#pragma once

#include <florence/error.h>

#include <cstdint>
#include <string>
#include <vector>

namespace florence {

struct FoundCheckpoint {
    std::string dir;         // the folder holding config.json (in the cache, a snapshot folder)
    std::string name;        // "microsoft/Florence-2-base" in the cache, else the folder's name
    std::string revision;    // the snapshot's commit in the cache, else ""
    std::string layout;      // "original", "native" (transformers' own) or "" when not told
    int64_t weightBytes = 0; // model.safetensors, pytorch_model.bin or their shards
    std::string where;       // "Hugging Face cache" or "Downloads"
};

// The hub cache folders that exist, by the order above (each once).
std::vector<std::string> huggingFaceCacheDirs();

// Florence-2 checkpoints (config.json with model_type florence2) in the hub cache and among the
// folders directly in ~/Downloads, the cache's first, each with its weights' total size. A
// snapshot whose files link outside its cache entry is left out.
std::vector<FoundCheckpoint> findCheckpoints();

// A folder as given, or for a hub name ("ORG/NAME", not an existing folder) its snapshot in the
// cache (the revision refs/main names, else the newest). Throws ImportError saying where it
// looked when the name is not in the cache, or when the snapshot's files link outside its
// cache entry.
std::string resolveCheckpoint(const std::string& folderOrName);

} // namespace florence

// A TorchScript archive read for torch::jit::load in slices, so that a load can stop in the
// middle of one module: once `cancel` is set, reads come back short, the archive reader fails,
// and the caller reports the cancel. `onRead`, when given, hears the bytes read so far (at
// most the file's size) after every slice. Internal to the engine.
//
//   auto file = std::make_shared<florence::detail::CancellableFile>(path, &cancel);
//   torch::jit::Module m = torch::jit::load(file, torch::kCPU); // c10::Error once cancelled
#pragma once

#include <caffe2/serialize/read_adapter_interface.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace florence::detail {

class CancellableFile : public caffe2::serialize::ReadAdapterInterface {
public:
    // Throws std::runtime_error (naming the file) unless `path` is a regular file.
    CancellableFile(const std::string& path, const std::atomic<bool>* cancel,
                    std::function<void(size_t bytes)> onRead = nullptr);
    ~CancellableFile() override;
    CancellableFile(const CancellableFile&) = delete;
    CancellableFile& operator=(const CancellableFile&) = delete;

    size_t size() const override { return m_size; }
    // Up to `n` bytes at `pos`, fewer at the end of the file or once cancelled.
    size_t read(uint64_t pos, void* buf, size_t n, const char* what = "") const override;

private:
    int m_fd = -1;
    size_t m_size = 0;
    const std::atomic<bool>* m_cancel;
    std::function<void(size_t bytes)> m_onRead;
    mutable size_t m_read = 0; // bytes read so far, for m_onRead
};

} // namespace florence::detail

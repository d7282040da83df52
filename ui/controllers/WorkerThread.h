// A QThread owned by a std::unique_ptr whose deleter quits the event loop and waits, as
// qBittorrent's Utils::Thread::UniquePtr: destroying the owner can never leak a running thread.
//
//   florence::ui::ThreadPtr m_thread = florence::ui::makeWorkerThread("engine");
//   m_worker->moveToThread(m_thread.get());
//   m_thread->start();
#pragma once

#include <QString>
#include <QThread>

#include <memory>

namespace florence::ui {

struct ThreadDeleter {
    void operator()(QThread* thread) const;
};

using ThreadPtr = std::unique_ptr<QThread, ThreadDeleter>;

// A named thread (the name shows in debuggers and `top -H`), not yet started.
ThreadPtr makeWorkerThread(const QString& name);

} // namespace florence::ui

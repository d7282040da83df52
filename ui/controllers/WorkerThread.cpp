#include "controllers/WorkerThread.h"

namespace florence::ui {

void ThreadDeleter::operator()(QThread* thread) const {
    // quit() only ends the event loop after the slot that is running returns, so whoever owns
    // the thread must first ask a long job (a generation) to stop; wait() then returns promptly.
    thread->quit();
    thread->wait();
    delete thread;
}

ThreadPtr makeWorkerThread(const QString& name) {
    ThreadPtr thread(new QThread);
    thread->setObjectName(name);
    return thread;
}

} // namespace florence::ui

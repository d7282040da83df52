// Keeps a top-level window on its screen: a saved or default size can exceed a smaller or more
// scaled screen (1360x900 logical is 2720x1800 pixels at a scale factor of 2).
//
//   fitToScreen(window);   // after show(): shrinks into the available area, then moves in
#pragma once

class QWidget;

namespace florence::ui {

// Leaves maximized and full-screen windows alone.
void fitToScreen(QWidget* window);

} // namespace florence::ui

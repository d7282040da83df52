// A wrapping label of at most a few lines: a longer text ends in "…" on its last line and shows
// whole in the tooltip. Words too long for a line (a path) break anywhere rather than being cut
// at the edge. For the panel's message, whose length differs from one machine to the next (a
// precision's reasons, an error naming a deep path), where a fixed height cut the last line in
// half.
//
//   auto* label = new ClampedLabel(5, panel);
//   label->setFullText(tr("Cannot open %1: …").arg(path)); // label->text() is what shows
#pragma once

#include <QLabel>

namespace florence::ui {

class ClampedLabel : public QLabel {
    Q_OBJECT

public:
    explicit ClampedLabel(int maxLines, QWidget* parent = nullptr);

    void setFullText(const QString& text);
    QString fullText() const { return m_text; }

    // `text` laid out in `width` pixels of `font`, one entry a line, at most `maxLines` of them:
    // the last ends in "…" when the text goes on.
    static QStringList clampedLines(const QString& text, const QFont& font, int width,
                                    int maxLines);

protected:
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void clamp();

    QString m_text;
    int m_maxLines;
};

} // namespace florence::ui

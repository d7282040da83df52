// The image with the answer drawn over it. Scene coordinates are pixels of the original image,
// so overlays and selected regions need no conversion.
//
//   auto* view = new ImageView(parent);
//   view->setImage(qimage);                  // fits it to the view
//   view->setAnswer(parsedAnswer);           // boxes, OCR quads, polygons with labels
//   view->setRegionSelectionEnabled(true);   // dragging now selects a region
//   connect(view, &ImageView::regionSelected, ...);   // QRectF in image pixels
#pragma once

#include <florence/answer.h>

#include <QGraphicsView>
#include <QImage>
#include <QStringList>

#include <optional>
#include <vector>

class QGraphicsPixmapItem;
class QGraphicsRectItem;
class QGraphicsItem;

namespace florence::ui {

class ImageView : public QGraphicsView {
    Q_OBJECT

public:
    explicit ImageView(QWidget* parent = nullptr);

    void setImage(const QImage& image);
    bool hasImage() const { return !m_image.isNull(); }
    QSize imageSize() const { return m_image.size(); }

    // Replaces the overlay. Cheap enough to call on every streamed token.
    void setAnswer(const ParsedAnswer& answer);
    // The image with the answer drawn as on screen, at the image's resolution.
    QImage renderAnnotated() const;
    // The labels drawn on the overlay, in item order.
    QStringList overlayLabels() const;
    // Each label followed by the item's confidence score ("circle 0.982"), where it has one.
    void setShowScores(bool on);
    bool showScores() const { return m_showScores; }
    void clearAnswer();
    int overlayItemCount() const { return static_cast<int>(m_overlays.size()); }
    // -1 removes the highlight.
    void highlightItem(int index);
    int highlightedItem() const { return m_highlighted; }

    // While enabled, a left drag selects a region instead of panning.
    void setRegionSelectionEnabled(bool enabled);
    bool regionSelectionEnabled() const { return m_regionMode; }
    void setRegion(const std::optional<QRectF>& region);
    std::optional<QRectF> region() const { return m_region; }

    double zoomFactor() const;
    bool isFitMode() const { return m_fitMode; }
    // Image point under a viewport position (tests and status text).
    QPointF imagePointAt(const QPoint& viewportPos) const;
    QPoint viewportPointOf(const QPointF& imagePoint) const;

public slots:
    void zoomIn();
    void zoomOut();
    void fitToWindow();

signals:
    void regionSelected(const QRectF& region);
    void itemClicked(int index);
    void zoomChanged(double factor);

protected:
    void wheelEvent(QWheelEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void zoomBy(double factor);
    void updateDragMode();
    QRectF clampToImage(const QRectF& r) const;
    void applyHighlight();
    void updateRegionItem();
    QString tagText(const QString& label, double score) const;

    QImage m_image;
    QGraphicsPixmapItem* m_pixmapItem = nullptr; // owned by the scene
    QGraphicsRectItem* m_regionItem = nullptr;   // owned by the scene
    std::vector<QGraphicsItem*> m_overlays;      // owned by the scene, one per answer item
    std::vector<QColor> m_overlayColors;
    ParsedAnswer m_answer;
    int m_highlighted = -1;
    bool m_fitMode = true;
    bool m_regionMode = false;
    bool m_showScores = false;
    bool m_selecting = false;
    QPointF m_selectStart;
    std::optional<QRectF> m_region;
};

} // namespace florence::ui

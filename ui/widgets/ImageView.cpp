#include "widgets/ImageView.h"

#include "presentation/Scores.h"

#include <QApplication>
#include <QBrush>
#include <QGraphicsPixmapItem>
#include <QGraphicsPolygonItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QMouseEvent>
#include <QPainter>
#include <QPen>
#include <QScrollBar>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

namespace florence::ui {

namespace {

constexpr double kMinZoom = 0.02;
constexpr double kMaxZoom = 40.0;
constexpr double kStep = 1.25;
constexpr int kItemIndexKey = 0;

// Tableau-10: distinct hues that stay readable on light and dark photographs.
const QColor kColors[] = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e),
                          QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
                          QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                          QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
                          QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};

QPolygonF toPolygon(const std::vector<double>& flat) {
    QPolygonF poly;
    for (size_t i = 0; i + 1 < flat.size(); i += 2)
        poly << QPointF(flat[i], flat[i + 1]);
    return poly;
}

// A label that keeps its screen size at any zoom, on a filled tag so it reads on any image.
QGraphicsItem* makeLabel(const QString& text, const QColor& color, QGraphicsItem* parent,
                         const QPointF& at) {
    auto* tag = new QGraphicsRectItem(parent);
    tag->setFlag(QGraphicsItem::ItemIgnoresTransformations);
    tag->setPos(at);
    auto* label = new QGraphicsSimpleTextItem(text, tag);
    QFont f = QApplication::font();
    f.setBold(true);
    label->setFont(f);
    const bool darkColor = color.lightnessF() < 0.55;
    label->setBrush(darkColor ? Qt::white : Qt::black);
    const QRectF r = label->boundingRect();
    // Above the shape's corner, like most annotation tools; the text sits in a 3 px padding.
    tag->setRect(QRectF(0, -r.height() - 4, r.width() + 6, r.height() + 4));
    label->setPos(3, -r.height() - 2);
    tag->setBrush(color);
    tag->setPen(Qt::NoPen);
    return tag;
}

} // namespace

ImageView::ImageView(QWidget* parent) : QGraphicsView(parent) {
    setObjectName(QStringLiteral("imageView"));
    auto* scene = new QGraphicsScene(this);
    setScene(scene);
    setRenderHints(QPainter::Antialiasing | QPainter::SmoothPixmapTransform);
    setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
    setResizeAnchor(QGraphicsView::AnchorViewCenter);
    setFocusPolicy(Qt::StrongFocus);
    setBackgroundRole(QPalette::Dark);
    setBackgroundBrush(palette().brush(QPalette::Dark));
    setMinimumSize(240, 180);
    m_pixmapItem = scene->addPixmap(QPixmap());
    m_pixmapItem->setTransformationMode(Qt::SmoothTransformation);
    m_pixmapItem->setZValue(0);
    m_regionItem = scene->addRect(QRectF());
    m_regionItem->setZValue(10);
    m_regionItem->setVisible(false);
    QPen regionPen(QColor(255, 215, 0), 2, Qt::DashLine);
    regionPen.setCosmetic(true);
    m_regionItem->setPen(regionPen);
    m_regionItem->setBrush(QColor(255, 215, 0, 40));
    updateDragMode();
}

QImage ImageView::renderAnnotated() const {
    // The scene as the user sees it (same colours, labels at the screen's font size), at the
    // image's own resolution; the dragged region is left out.
    QImage out(m_image.size(), QImage::Format_RGB32);
    out.fill(Qt::black);
    const bool regionShown = m_regionItem->isVisible();
    m_regionItem->setVisible(false);
    {
        QPainter p(&out);
        p.setRenderHint(QPainter::Antialiasing);
        p.setRenderHint(QPainter::TextAntialiasing);
        const QRectF rect(QPointF(0, 0), QSizeF(m_image.size()));
        scene()->render(&p, rect, rect);
    }
    m_regionItem->setVisible(regionShown);
    return out;
}

void ImageView::setImage(const QImage& image) {
    m_image = image;
    clearAnswer();
    setRegion(std::nullopt);
    m_pixmapItem->setPixmap(QPixmap::fromImage(image));
    scene()->setSceneRect(QRectF(QPointF(0, 0), QSizeF(image.size())));
    fitToWindow();
}

void ImageView::clearAnswer() {
    for (QGraphicsItem* item : m_overlays) {
        scene()->removeItem(item);
        delete item;
    }
    m_overlays.clear();
    m_overlayColors.clear();
    m_answer = ParsedAnswer();
    m_highlighted = -1;
}

void ImageView::setAnswer(const ParsedAnswer& answer) {
    const int keepHighlight = m_highlighted;
    clearAnswer();
    m_answer = answer;
    QHash<QString, int> colorOfLabel;
    for (size_t i = 0; i < answer.items.size(); ++i) {
        const AnswerItem& it = answer.items[i];
        const QString label = QString::fromStdString(it.label).trimmed();
        // One color per label, so "car" is the same color everywhere; unlabeled items cycle.
        int colorIndex = static_cast<int>(i);
        if (!label.isEmpty()) {
            auto found = colorOfLabel.find(label);
            if (found == colorOfLabel.end())
                found = colorOfLabel.insert(label, colorOfLabel.size());
            colorIndex = found.value();
        }
        const QColor color = kColors[colorIndex % 10];
        QPen pen(color, 2.5);
        pen.setCosmetic(true); // constant on-screen width at any zoom
        pen.setJoinStyle(Qt::MiterJoin);
        QGraphicsItem* shape = nullptr;
        QPointF labelAt;
        if (it.kind == AnswerItem::Kind::Box) {
            auto* r = new QGraphicsRectItem(
                QRectF(QPointF(it.box.x1, it.box.y1), QPointF(it.box.x2, it.box.y2)).normalized());
            r->setPen(pen);
            shape = r;
            labelAt = r->rect().topLeft();
        } else if (it.kind == AnswerItem::Kind::Quad) {
            auto* p = new QGraphicsPolygonItem(toPolygon(it.quad));
            p->setPen(pen);
            shape = p;
            labelAt = p->polygon().isEmpty() ? QPointF() : p->polygon().first();
        } else {
            // Several polygons of one object share one parent so highlighting treats them as one.
            auto* group = new QGraphicsRectItem();
            group->setPen(Qt::NoPen);
            QColor fill = color;
            fill.setAlpha(80);
            for (const auto& flat : it.polygons) {
                auto* p = new QGraphicsPolygonItem(toPolygon(flat), group);
                p->setPen(pen);
                p->setBrush(fill);
                if (labelAt.isNull() && !p->polygon().isEmpty())
                    labelAt = p->polygon().boundingRect().topLeft();
            }
            shape = group;
        }
        const QString tag = tagText(label, it.score);
        if (!tag.isEmpty())
            makeLabel(tag, color, shape, labelAt);
        shape->setData(kItemIndexKey, static_cast<int>(i));
        shape->setZValue(5);
        scene()->addItem(shape);
        m_overlays.push_back(shape);
        m_overlayColors.push_back(color);
    }
    if (keepHighlight >= 0 && keepHighlight < static_cast<int>(m_overlays.size()))
        m_highlighted = keepHighlight;
    applyHighlight();
}

QString ImageView::tagText(const QString& label, double score) const {
    if (!m_showScores || !isScored(score))
        return label;
    return label.isEmpty() ? scoreText(score) : label + QLatin1Char(' ') + scoreText(score);
}

void ImageView::setShowScores(bool on) {
    if (on == m_showScores)
        return;
    m_showScores = on;
    const ParsedAnswer answer = m_answer;
    setAnswer(answer);
}

QStringList ImageView::overlayLabels() const {
    QStringList labels;
    for (const QGraphicsItem* shape : m_overlays) {
        QString text;
        std::vector<const QGraphicsItem*> todo{shape};
        while (!todo.empty()) {
            const QGraphicsItem* item = todo.back();
            todo.pop_back();
            if (const auto* t = dynamic_cast<const QGraphicsSimpleTextItem*>(item))
                text = t->text();
            for (const QGraphicsItem* child : item->childItems())
                todo.push_back(child);
        }
        labels << text;
    }
    return labels;
}

void ImageView::highlightItem(int index) {
    m_highlighted = (index >= 0 && index < static_cast<int>(m_overlays.size())) ? index : -1;
    applyHighlight();
}

void ImageView::applyHighlight() {
    for (size_t i = 0; i < m_overlays.size(); ++i) {
        const bool isHighlighted = static_cast<int>(i) == m_highlighted;
        // With a selection, the others fade so the chosen shape stands out on busy images.
        m_overlays[i]->setOpacity(m_highlighted < 0 || isHighlighted ? 1.0 : 0.3);
        m_overlays[i]->setZValue(isHighlighted ? 6 : 5);
        const double width = isHighlighted ? 5.0 : 2.5;
        auto restyle = [&](QGraphicsItem* item) {
            if (auto* shape = dynamic_cast<QAbstractGraphicsShapeItem*>(item)) {
                if (shape->pen().style() == Qt::NoPen)
                    return;
                QPen p = shape->pen();
                p.setWidthF(width);
                shape->setPen(p);
            }
        };
        restyle(m_overlays[i]);
        for (QGraphicsItem* child : m_overlays[i]->childItems())
            if (!child->flags().testFlag(QGraphicsItem::ItemIgnoresTransformations))
                restyle(child);
    }
}

void ImageView::setRegionSelectionEnabled(bool enabled) {
    m_regionMode = enabled;
    m_selecting = false;
    updateDragMode();
}

void ImageView::updateDragMode() {
    setDragMode(m_regionMode ? QGraphicsView::NoDrag : QGraphicsView::ScrollHandDrag);
    viewport()->setCursor(m_regionMode ? Qt::CrossCursor : Qt::OpenHandCursor);
}

void ImageView::setRegion(const std::optional<QRectF>& region) {
    m_region = region;
    updateRegionItem();
}

void ImageView::updateRegionItem() {
    m_regionItem->setVisible(m_region.has_value());
    if (m_region)
        m_regionItem->setRect(*m_region);
}

QRectF ImageView::clampToImage(const QRectF& r) const {
    return r.normalized().intersected(QRectF(QPointF(0, 0), QSizeF(m_image.size())));
}

double ImageView::zoomFactor() const {
    return transform().m11();
}

QPointF ImageView::imagePointAt(const QPoint& viewportPos) const {
    return mapToScene(viewportPos);
}

QPoint ImageView::viewportPointOf(const QPointF& imagePoint) const {
    return mapFromScene(imagePoint);
}

void ImageView::zoomBy(double factor) {
    if (m_image.isNull())
        return;
    const double current = zoomFactor();
    const double target = std::clamp(current * factor, kMinZoom, kMaxZoom);
    if (std::abs(target - current) < 1e-9)
        return;
    m_fitMode = false;
    scale(target / current, target / current);
    emit zoomChanged(target);
}

void ImageView::zoomIn() {
    // Keys zoom about the center; the wheel zooms about the cursor (the anchor).
    const auto anchor = transformationAnchor();
    setTransformationAnchor(QGraphicsView::AnchorViewCenter);
    zoomBy(kStep);
    setTransformationAnchor(anchor);
}

void ImageView::zoomOut() {
    const auto anchor = transformationAnchor();
    setTransformationAnchor(QGraphicsView::AnchorViewCenter);
    zoomBy(1.0 / kStep);
    setTransformationAnchor(anchor);
}

void ImageView::fitToWindow() {
    m_fitMode = true;
    resetTransform();
    if (!m_image.isNull())
        fitInView(sceneRect(), Qt::KeepAspectRatio);
    emit zoomChanged(zoomFactor());
}

void ImageView::wheelEvent(QWheelEvent* event) {
    const int delta = event->angleDelta().y();
    if (delta == 0) {
        QGraphicsView::wheelEvent(event);
        return;
    }
    // Smooth for touchpads (small deltas), one step per notch for mice.
    zoomBy(std::pow(kStep, delta / 120.0));
    event->accept();
}

void ImageView::resizeEvent(QResizeEvent* event) {
    QGraphicsView::resizeEvent(event);
    if (m_fitMode && !m_image.isNull()) {
        fitInView(sceneRect(), Qt::KeepAspectRatio);
        emit zoomChanged(zoomFactor());
    }
}

void ImageView::mousePressEvent(QMouseEvent* event) {
    if (m_regionMode && event->button() == Qt::LeftButton && !m_image.isNull()) {
        m_selecting = true;
        m_selectStart = mapToScene(event->position().toPoint());
        m_region = clampToImage(QRectF(m_selectStart, m_selectStart));
        updateRegionItem();
        event->accept();
        return;
    }
    if (event->button() == Qt::LeftButton) {
        for (QGraphicsItem* item : items(event->position().toPoint())) {
            while (item->parentItem())
                item = item->parentItem();
            const QVariant index = item->data(kItemIndexKey);
            if (index.isValid()) {
                emit itemClicked(index.toInt());
                break;
            }
        }
    }
    QGraphicsView::mousePressEvent(event);
}

void ImageView::mouseMoveEvent(QMouseEvent* event) {
    // m_selecting, not event->buttons(): synthesized moves do not always carry the button state.
    if (m_selecting) {
        m_region = clampToImage(QRectF(m_selectStart, mapToScene(event->position().toPoint())));
        updateRegionItem();
        event->accept();
        return;
    }
    QGraphicsView::mouseMoveEvent(event);
}

void ImageView::mouseReleaseEvent(QMouseEvent* event) {
    if (m_selecting && event->button() == Qt::LeftButton) {
        m_selecting = false;
        const QRectF r =
            clampToImage(QRectF(m_selectStart, mapToScene(event->position().toPoint())));
        // A click without a drag clears the region.
        if (r.width() < 2 || r.height() < 2) {
            m_region.reset();
            updateRegionItem();
        } else {
            m_region = r;
            updateRegionItem();
            emit regionSelected(r);
        }
        event->accept();
        return;
    }
    QGraphicsView::mouseReleaseEvent(event);
    if (!m_regionMode)
        viewport()->setCursor(Qt::OpenHandCursor);
}

void ImageView::changeEvent(QEvent* event) {
    // Follow light/dark palette switches at run time.
    if (event->type() == QEvent::PaletteChange)
        setBackgroundBrush(palette().brush(QPalette::Dark));
    QGraphicsView::changeEvent(event);
}

} // namespace florence::ui

package dev.crucible.runner.abliterate;

import dev.crucible.api.io.AtomicFiles;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.geom.Ellipse2D;
import java.awt.geom.Path2D;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import javax.imageio.ImageIO;
import javax.imageio.stream.ImageOutputStream;
import javax.imageio.stream.MemoryCacheImageOutputStream;

/**
 * A scatter plot of every trial on two objectives (x and y, both minimized), with the Pareto front drawn as a
 * staircase, written as a PNG with plain Java2D (headless). Made for the refusals-vs-KL picture of a study.
 */
public final class ParetoPlot {
    /** One point: a trial number and its two values. */
    public record Point(int trial, double x, double y) { }

    private static final int WIDTH = 900;
    private static final int HEIGHT = 600;
    private static final int LEFT = 80;
    private static final int RIGHT = 30;
    private static final int TOP = 50;
    private static final int BOTTOM = 60;

    private ParetoPlot() {
    }

    public static void write(Path file, String title, String xLabel, String yLabel, List<Point> all, List<Point> front,
                             Point base) {
        System.setProperty("java.awt.headless", "true");
        BufferedImage image = new BufferedImage(WIDTH, HEIGHT, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = image.createGraphics();
        try {
            g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
            g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
            g.setColor(Color.WHITE);
            g.fillRect(0, 0, WIDTH, HEIGHT);
            double xMax = niceMax(Math.max(max(all, true), base == null ? 0 : base.x()));
            double yMax = niceMax(Math.max(max(all, false), base == null ? 0 : base.y()));
            Axes axes = new Axes(xMax, yMax);
            axes.draw(g, xLabel, yLabel);
            g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
            g.setColor(Color.BLACK);
            g.drawString(title, LEFT, 30);

            g.setColor(new Color(150, 150, 150, 160));
            for (Point p : all) {
                dot(g, axes, p, 6);
            }
            List<Point> sorted = front.stream().sorted(Comparator.comparingDouble(Point::x)).toList();
            if (!sorted.isEmpty()) {
                Path2D stairs = new Path2D.Double();
                stairs.moveTo(axes.px(sorted.getFirst().x()), axes.py(sorted.getFirst().y()));
                for (int i = 1; i < sorted.size(); i++) {
                    stairs.lineTo(axes.px(sorted.get(i).x()), axes.py(sorted.get(i - 1).y()));
                    stairs.lineTo(axes.px(sorted.get(i).x()), axes.py(sorted.get(i).y()));
                }
                g.setColor(new Color(200, 40, 40));
                g.setStroke(new BasicStroke(1.5f));
                g.draw(stairs);
                g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
                for (Point p : sorted) {
                    dot(g, axes, p, 9);
                    g.drawString("#" + p.trial(), (int) axes.px(p.x()) + 6, (int) axes.py(p.y()) - 6);
                }
            }
            if (base != null) {
                g.setColor(new Color(30, 90, 200));
                dot(g, axes, base, 11);
                g.drawString("base", (int) axes.px(base.x()) + 8, (int) axes.py(base.y()) + 4);
            }
        } finally {
            g.dispose();
        }
        ByteArrayOutputStream png = new ByteArrayOutputStream();
        try (ImageOutputStream stream = new MemoryCacheImageOutputStream(png)) {
            ImageIO.write(image, "png", stream);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot encode the plot", e);
        }
        // Through AtomicFiles: the plot is replaced whole, gets the umask's permissions, and a full disk is one line.
        AtomicFiles.write(file, png.toByteArray());
    }

    private static void dot(Graphics2D g, Axes axes, Point p, double size) {
        g.fill(new Ellipse2D.Double(axes.px(p.x()) - size / 2, axes.py(p.y()) - size / 2, size, size));
    }

    private static double max(List<Point> points, boolean x) {
        double m = 0;
        for (Point p : points) {
            double v = x ? p.x() : p.y();
            if (Double.isFinite(v)) {
                m = Math.max(m, v);
            }
        }
        return m;
    }

    /** 1, 2 or 5 times a power of ten at or above {@code value}. */
    static double niceMax(double value) {
        if (!(value > 0)) {
            return 1;
        }
        double power = Math.pow(10, Math.floor(Math.log10(value)));
        for (double step : new double[] {1, 2, 5, 10}) {
            if (step * power >= value) {
                return step * power;
            }
        }
        return 10 * power;
    }

    private record Axes(double xMax, double yMax) {
        double px(double x) {
            double clamped = Double.isFinite(x) ? Math.min(x, xMax) : xMax;
            return LEFT + clamped / xMax * (WIDTH - LEFT - RIGHT);
        }

        double py(double y) {
            double clamped = Double.isFinite(y) ? Math.min(y, yMax) : yMax;
            return HEIGHT - BOTTOM - clamped / yMax * (HEIGHT - TOP - BOTTOM);
        }

        void draw(Graphics2D g, String xLabel, String yLabel) {
            g.setColor(Color.BLACK);
            g.setStroke(new BasicStroke(1f));
            g.drawLine(LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM);
            g.drawLine(LEFT, TOP, LEFT, HEIGHT - BOTTOM);
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
            for (int i = 0; i <= 5; i++) {
                double x = xMax * i / 5;
                double y = yMax * i / 5;
                int px = (int) px(x);
                int py = (int) py(y);
                g.setColor(new Color(230, 230, 230));
                g.drawLine(px, TOP, px, HEIGHT - BOTTOM);
                g.drawLine(LEFT, py, WIDTH - RIGHT, py);
                g.setColor(Color.BLACK);
                g.drawString(String.format(Locale.ROOT, "%.3g", x), px - 12, HEIGHT - BOTTOM + 16);
                g.drawString(String.format(Locale.ROOT, "%.3g", y), LEFT - 45, py + 4);
            }
            g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 13));
            g.drawString(xLabel, LEFT + (WIDTH - LEFT - RIGHT) / 2 - 60, HEIGHT - 18);
            Graphics2D rotated = (Graphics2D) g.create();
            rotated.rotate(-Math.PI / 2);
            rotated.drawString(yLabel, -(TOP + (HEIGHT - TOP - BOTTOM) / 2) - 40, 20);
            rotated.dispose();
        }
    }
}

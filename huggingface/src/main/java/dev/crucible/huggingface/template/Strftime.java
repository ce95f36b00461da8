package dev.crucible.huggingface.template;

import java.time.DayOfWeek;
import java.time.LocalDateTime;
import java.time.temporal.ChronoField;
import java.time.temporal.IsoFields;
import java.util.Locale;

/**
 * C-locale {@code strftime}, for the {@code strftime_now(format)} global (Llama 3 writes "Today Date: 26 Jul 2024"
 * with {@code "%d %b %Y"}). Time-zone directives print nothing, as for Python's naive {@code datetime.now()}.
 */
final class Strftime {

    private static final String[] DAYS = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
        "Sunday"};
    private static final String[] MONTHS = {"January", "February", "March", "April", "May", "June", "July",
        "August", "September", "October", "November", "December"};

    private Strftime() {
    }

    static String format(LocalDateTime time, String pattern) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < pattern.length(); i++) {
            char c = pattern.charAt(i);
            if (c != '%' || i + 1 >= pattern.length()) {
                out.append(c);
                continue;
            }
            char directive = pattern.charAt(++i);
            String dayName = DAYS[time.getDayOfWeek().getValue() - 1];
            String monthName = MONTHS[time.getMonthValue() - 1];
            int hour12 = time.getHour() % 12 == 0 ? 12 : time.getHour() % 12;
            switch (directive) {
                case 'a' -> out.append(dayName, 0, 3);
                case 'A' -> out.append(dayName);
                case 'b', 'h' -> out.append(monthName, 0, 3);
                case 'B' -> out.append(monthName);
                case 'c' -> out.append(format(time, "%a %b %e %H:%M:%S %Y"));
                case 'C' -> out.append(two(time.getYear() / 100));
                case 'd' -> out.append(two(time.getDayOfMonth()));
                case 'D', 'x' -> out.append(format(time, "%m/%d/%y"));
                case 'e' -> out.append(String.format(Locale.ROOT, "%2d", time.getDayOfMonth()));
                case 'F' -> out.append(format(time, "%Y-%m-%d"));
                case 'G' -> out.append(time.get(IsoFields.WEEK_BASED_YEAR));
                case 'g' -> out.append(two(time.get(IsoFields.WEEK_BASED_YEAR) % 100));
                case 'H' -> out.append(two(time.getHour()));
                case 'I' -> out.append(two(hour12));
                case 'j' -> out.append(String.format(Locale.ROOT, "%03d", time.getDayOfYear()));
                case 'k' -> out.append(String.format(Locale.ROOT, "%2d", time.getHour()));
                case 'l' -> out.append(String.format(Locale.ROOT, "%2d", hour12));
                case 'm' -> out.append(two(time.getMonthValue()));
                case 'M' -> out.append(two(time.getMinute()));
                case 'n' -> out.append('\n');
                case 'p' -> out.append(time.getHour() < 12 ? "AM" : "PM");
                case 'r' -> out.append(format(time, "%I:%M:%S %p"));
                case 'R' -> out.append(format(time, "%H:%M"));
                case 'S' -> out.append(two(time.getSecond()));
                case 't' -> out.append('\t');
                case 'T', 'X' -> out.append(format(time, "%H:%M:%S"));
                case 'u' -> out.append(time.getDayOfWeek().getValue());
                case 'w' -> out.append(time.getDayOfWeek().getValue() % 7);
                case 'U' -> out.append(two(weekOfYear(time, DayOfWeek.SUNDAY)));
                case 'W' -> out.append(two(weekOfYear(time, DayOfWeek.MONDAY)));
                case 'V' -> out.append(two(time.get(IsoFields.WEEK_OF_WEEK_BASED_YEAR)));
                case 'y' -> out.append(two(time.getYear() % 100));
                case 'Y' -> out.append(time.getYear());
                case 'f' -> out.append(String.format(Locale.ROOT, "%06d", time.get(ChronoField.MICRO_OF_SECOND)));
                case 'z', 'Z' -> { }
                case '%' -> out.append('%');
                default -> out.append('%').append(directive);
            }
        }
        return out.toString();
    }

    /** Week number with weeks starting on {@code firstDay}; days before the first such day are week 0. */
    private static int weekOfYear(LocalDateTime time, DayOfWeek firstDay) {
        int dayOfYear = time.getDayOfYear() - 1;
        int weekday = (time.getDayOfWeek().getValue() - firstDay.getValue() + 7) % 7;
        return (dayOfYear - weekday + 7) / 7;
    }

    private static String two(int value) {
        return value < 10 ? "0" + value : Integer.toString(value);
    }
}

package dev.crucible.huggingface.hub;

/** Told how far each file's download has come, so a command line can draw a bar. */
@FunctionalInterface
public interface DownloadProgress {

    DownloadProgress NONE = (file, bytesDone, bytesTotal) -> { };

    /**
     * @param file       the file's name in the repository
     * @param bytesDone  bytes received so far
     * @param bytesTotal the file's size, or -1 when the server did not say
     */
    void onProgress(String file, long bytesDone, long bytesTotal);
}
